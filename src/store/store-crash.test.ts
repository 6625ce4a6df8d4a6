import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Store } from './store.js';

describe('store durability', () => {
  it('a process killed mid-write loses nothing it had committed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sdesk-crash-'));
    const writer = resolve(import.meta.dirname, '../../test/fixtures/store-writer.ts');
    const child = spawn(process.execPath, ['--import', 'tsx', writer, dir], { stdio: ['ignore', 'pipe', 'inherit'] });
    let last = -1;
    let buf = '';
    await new Promise<void>((done) => {
      child.stdout.on('data', (c: Buffer) => {
        buf += c.toString();
        const lines = buf.split('\n');
        buf = lines.pop()!;
        for (const l of lines) last = Number(l.split(' ')[1]);
        // Kill it in the middle of its write loop, without warning.
        if (last >= 300) child.kill('SIGKILL');
      });
      child.on('close', () => done());
    });
    expect(last).toBeGreaterThanOrEqual(300);
    const store = Store.open(dir);
    try {
      const records = new Map(store.sessions.list('crash').map((s) => [s.key, s.cwd]));
      for (let i = 0; i <= last; i++) expect(records.get(`s${i}`)).toBe(`/dir/${i}`);
      // Whatever was in flight is all or nothing: never a session without its record.
      for (const cwd of records.values()) expect(cwd).not.toBeNull();
    } finally {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
