import { describe, expect, it } from 'vitest';
import { runMain } from '../../test/run-cli-main.js';
import { checkpointTable, formatBytes } from './checkpoint-commands.js';

describe('checkpoint commands', () => {
  it('a --count that is not a whole number is refused before the core opens, saying what is valid', async () => {
    const r = await runMain(['sandbox', 'fork', 'demo', 'abc123', '--as', 'try', '--count', 'three']);
    expect(r.code).toBe(125);
    expect(r.stderr).toMatch(/--count must be a whole number/);
    expect(r.stderr).toMatch(/1 to 20/);
  });

  it('fork without --as says it is required', async () => {
    const r = await runMain(['sandbox', 'fork', 'demo', 'abc123']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/--as/);
  });

  it('the list shows size, memory and broken ones with why', () => {
    const base = { sandbox: 'demo', backend: 'docker', createdAt: '2026-01-01T00:00:00.000Z', memory: false, sessions: [] };
    const out = checkpointTable([
      { ...base, id: 'a1', label: 'before', sizeBytes: 5 * 1024 * 1024, broken: false, brokenDetail: null },
      { ...base, id: 'b2', label: null, sizeBytes: null, broken: true, brokenDetail: 'image was removed outside Sandbox Desk' },
    ]);
    expect(out).toMatch(/a1\s+demo\s+before\s+\S+\s+5\.0 MiB\s+disk only\s+ok/);
    expect(out).toMatch(/b2 .* broken: image was removed outside Sandbox Desk/);
    expect(checkpointTable([])).toMatch(/No checkpoints/);
    expect(formatBytes(512)).toBe('512 B');
  });
});
