import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RunningCommands } from './running-commands.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function root(): string {
  const d = mkdtempSync(join(tmpdir(), 'running-commands-'));
  dirs.push(d);
  return d;
}

describe('RunningCommands', () => {
  it('a command whose process died while it ran becomes an interrupted event: no exit code, cwd not observed, the record kept', () => {
    const dir = root();
    const dead = new Set<number>();
    const r = new RunningCommands(dir, (pid) => !dead.has(pid));
    const endedA = r.begin({ sandbox: 'sb', session: 'a', command: 'cd /var; sleep 30', startedAt: '2026-01-01T00:00:02.000Z' });
    r.begin({ sandbox: 'sb', session: 'b', command: 'make', startedAt: '2026-01-01T00:00:01.000Z' });
    endedA();
    // Its process is alive (this one): nothing to report, the file stays.
    expect(r.sweep()).toEqual([]);
    expect(readdirSync(join(dir, 'sb', 'running'))).toHaveLength(1);
    dead.add(process.pid);
    const swept = r.sweep();
    expect(swept).toEqual([
      {
        sandbox: 'sb',
        event: {
          at: '2026-01-01T00:00:01.000Z',
          kind: 'command',
          summary: 'make',
          session: 'b',
          cwdObserved: null,
          exitCode: null,
          interrupted: true,
          warnings: [expect.stringMatching(/^cwd_unobserved: .*its cwd was not observed and session b keeps its last observed cwd$/)],
          error: `interrupted: the process running it (pid ${process.pid}) ended before the command finished`,
        },
      },
    ]);
    // Reported once.
    expect(readdirSync(join(dir, 'sb', 'running'))).toEqual([]);
    expect(r.sweep()).toEqual([]);
  });

  it('a file cut by the crash, or naming another sandbox than its folder, is dropped without an event', () => {
    const dir = root();
    const r = new RunningCommands(dir, () => false);
    r.begin({ sandbox: 'sb', session: 'a', command: 'true', startedAt: '2026-01-01T00:00:00.000Z' });
    const running = join(dir, 'sb', 'running');
    writeFileSync(join(running, 'cut.json'), '{"sandbox":"sb","sess');
    writeFileSync(
      join(running, 'other.json'),
      JSON.stringify({ sandbox: 'elsewhere', session: 'a', command: 'x', startedAt: '2026-01-01T00:00:00.000Z', pid: 7 }),
    );
    expect(r.sweep().map((e) => e.event.summary)).toEqual(['true']);
    expect(readdirSync(running)).toEqual([]);
  });
});
