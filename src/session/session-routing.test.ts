import { describe, expect, it } from 'vitest';
import { rejectsWith } from '../../test/expect-error.js';
import type { RawRun } from '../exec/command-capture.js';
import { ShellPool, type AttachedRunner } from '../exec/shell-pool.js';
import type { ExecWarning } from '../shared/exec-result.js';
import { runAttached } from './run-command.js';

/** A terminal's runner with a scripted result (the boundary: attached-shell.test.ts drives the real one). */
function runner(result: Partial<RawRun> & { waitedMs: number }, over: Partial<AttachedRunner> = {}): AttachedRunner & { asked: unknown[] } {
  const asked: unknown[] = [];
  return {
    alive: true,
    incarnation: 'inc-1',
    asked,
    run: (req) => {
      asked.push(req);
      return Promise.resolve({
        stdout: Buffer.alloc(0),
        stderr: Buffer.alloc(0),
        truncated: { stdout: false, stderr: false },
        totalBytes: { stdout: 0, stderr: 0 },
        start: { pid: 7, why: 'ok', used: '/tmp' },
        end: { exitCode: 0, state: 'ok', cwd: '/tmp' },
        processExit: null,
        killed: null,
        transportError: '',
        framingBroken: null,
        ...result,
      });
    },
    ...over,
  };
}

const req = { target: '/tmp', tmpDir: '/tmp', command: 'pwd', timeoutMs: 3000, maxOutputBytes: 1024 };

describe("routing a session's commands to the terminal attached to it", () => {
  it('ShellPool gives the attached runner for its (sandbox, session, user) while registered, up, and of this incarnation', () => {
    const pool = new ShellPool({ idleMs: 60_000 });
    const r = runner({ waitedMs: 0 });
    const reg = pool.attach('s', 'a', undefined, r);
    expect(pool.attachedTo('s', 'a', undefined, 'inc-1')).toBe(r);
    expect(pool.hasLive('s', 'a', undefined)).toBe(true);
    expect(pool.attachedTo('s', 'b', undefined, 'inc-1')).toBeNull();
    expect(pool.attachedTo('s', 'a', 'other-user', 'inc-1')).toBeNull();
    expect(pool.attachedTo('s', 'a', undefined, 'inc-2')).toBeNull();
    reg.dispose();
    expect(pool.attachedTo('s', 'a', undefined, 'inc-1')).toBeNull();
    expect(pool.hasLive('s', 'a', undefined)).toBe(false);
    pool.closeAll();
  });

  it('a runner whose terminal closed is not given; a later registration of the same session is not undone by an earlier one', () => {
    const pool = new ShellPool({ idleMs: 60_000 });
    const gone = runner({ waitedMs: 0 }, { alive: false });
    const first = pool.attach('s', 'a', undefined, gone);
    expect(pool.attachedTo('s', 'a', undefined, 'inc-1')).toBeNull();
    const live = runner({ waitedMs: 0 });
    pool.attach('s', 'a', undefined, live);
    first.dispose();
    expect(pool.attachedTo('s', 'a', undefined, 'inc-1')).toBe(live);
    pool.closeAll();
  });

  it("reports a wait for the person's prompt as terminal_busy, naming the session", async () => {
    const warnings: ExecWarning[] = [];
    await runAttached(runner({ waitedMs: 2400 }), req, 'agent-1', warnings);
    expect(warnings).toEqual([
      {
        code: 'terminal_busy',
        message: "waited 2.4 s for the person's command in the terminal attached to session agent-1 to give the prompt back",
      },
    ]);
    const none: ExecWarning[] = [];
    await runAttached(runner({ waitedMs: 10 }), req, 'agent-1', none);
    expect(none).toEqual([]);
  });

  it('a command that timed out before the shell took it: a clear error saying it did not run and what to do', async () => {
    const e = await rejectsWith(
      runAttached(runner({ waitedMs: 3000, start: null, end: null, killed: 'timeout' }), req, 'agent-1', []),
      'cancelled',
    );
    expect(e.message).toBe(
      "the command timed out after 3 s while it waited for the person's command in the terminal attached to session agent-1; it did not run",
    );
    expect(e.hint).toMatch(/Ctrl\+C/);
  });
});
