import { describe, expect, it } from 'vitest';
import type { RawRun, RunRequest } from '../exec/command-capture.js';
import type { ShellPool } from '../exec/shell-pool.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import type { ExecWarning } from '../shared/exec-result.js';
import type { SandboxStore } from '../store/sandbox-store.js';
import type { SessionRecord, SessionStore } from '../store/session-store.js';
import { runCommand, type ExecContext, type ExecOutcome } from './run-command.js';
import { SessionTurns } from './session-turns.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * A faked session shell: a command is `pwd; cd DIR` (optionally after `sleep MS;`). It starts in the
 * planned target, prints it, waits, and ends in DIR — as the wrapper would report.
 */
function fakeShell(): { pool: ShellPool; runs: RunRequest[] } {
  const runs: RunRequest[] = [];
  const shell = {
    async run(req: RunRequest): Promise<RawRun> {
      runs.push(req);
      const wait = /sleep (\d+)/.exec(req.command);
      const to = /cd (\S+)/.exec(req.command)?.[1] ?? req.target;
      if (wait) await sleep(Number(wait[1]));
      return {
        stdout: Buffer.from(`${req.target}\n`),
        stderr: Buffer.alloc(0),
        truncated: { stdout: false, stderr: false },
        totalBytes: { stdout: req.target.length + 1, stderr: 0 },
        start: { pid: 7, why: 'ok', used: req.target },
        end: { exitCode: 0, state: 'ok', cwd: to },
        processExit: null,
        killed: null,
        transportError: '',
        framingBroken: null,
      };
    },
  };
  const pool = {
    // Opening a shell takes a varying time, as connecting does: calls would overtake each other here.
    acquire: async () => {
      await sleep(Math.random() * 15);
      return { shell, dropped: null };
    },
    // No person's terminal is attached to these sessions: their commands go to the session shell.
    attachedTo: () => null,
  } as unknown as ShellPool;
  return { pool, runs };
}

/** An in-memory session store with the methods runCommand uses. */
function fakeContext(pool: ShellPool): { ctx: ExecContext; records: Map<string, SessionRecord> } {
  const records = new Map<string, SessionRecord>();
  const sessions = {
    get: (_s: string, key: string) => records.get(key),
    ensure: (_s: string, key: string, init: { parent: string | null; cwd: string | null; at: string }) => {
      const rec = { key, parent: init.parent, cwd: init.cwd, source: init.cwd ? 'created' : null, createdAt: init.at, lastWarnings: [] };
      records.set(key, rec as unknown as SessionRecord);
      return records.get(key)!;
    },
    recordObserved: (_s: string, key: string, cwd: string) => {
      Object.assign(records.get(key)!, { cwd, source: 'observed' });
    },
    fillIfEmpty: () => false,
    setLastWarnings: (_s: string, key: string, w: ExecWarning[]) => {
      Object.assign(records.get(key)!, { lastWarnings: w });
    },
  } as unknown as SessionStore;
  const env = {
    user: 'agent',
    home: '/home/agent',
    defaultCwd: '/home/agent',
    cwd: null,
    mounts: [],
    incarnation: 'i1',
    getTempDir: () => '/tmp',
  };
  const ctx: ExecContext = {
    sandbox: 'box',
    env: env as unknown as SandboxEnvironment,
    isContainer: true,
    sessions,
    sandboxes: { setLastObservedCwd: () => undefined } as unknown as SandboxStore,
    shells: pool,
    hostHome: '/nonexistent-host-home',
    sandboxRoots: ['/home/agent'],
    defaultCwd: '/home/agent',
    standingWarnings: [],
    persist: (w) => w(),
    reconnect: async () => env as unknown as SandboxEnvironment,
  };
  return { ctx, records };
}

/** A call as the core makes it: its turn taken on arrival, then an await of varying length, then runCommand. */
async function call(ctx: ExecContext, turns: SessionTurns, session: string, command: string, timeoutMs = 5000): Promise<ExecOutcome> {
  const turn = turns.enter(ctx.sandbox, session, { timeoutMs });
  try {
    await sleep(Math.random() * 10);
    return await runCommand(ctx, { command, session, timeoutMs, mode: 'shell', maxOutputBytes: 1 << 20, turn });
  } finally {
    turn.release();
  }
}

describe('runCommand under concurrency: one session, one line', () => {
  it('runs concurrent calls of a session in arrival order, each starting where the previous one ended', async () => {
    const { pool } = fakeShell();
    const { ctx, records } = fakeContext(pool);
    const turns = new SessionTurns();
    const sessions = ['a', 'b', 'c'];
    const calls = sessions.flatMap((s) =>
      Array.from({ length: 12 }, (_, i) => ({ s, i, p: call(ctx, turns, s, `pwd; cd /tmp/${s}${i}`) })),
    );
    const results = await Promise.all(calls.map((c) => c.p));
    let wrong = 0;
    calls.forEach((c, n) => {
      const expected = c.i === 0 ? '/home/agent' : `/tmp/${c.s}${c.i - 1}`;
      if (results[n]!.startCwd !== expected) wrong++;
    });
    expect(wrong).toBe(0);
    for (const s of sessions) expect(records.get(s)!.cwd).toBe(`/tmp/${s}11`);
    // The lines are dropped once empty: memory stays bounded however many sessions came and went.
    await sleep(0);
    expect(turns.lines).toBe(0);
  });

  it('plans a waiting call when its turn comes: `sleep; cd /tmp/q1` then `pwd` runs in /tmp/q1 and the record keeps it', async () => {
    const { pool, runs } = fakeShell();
    const { ctx, records } = fakeContext(pool);
    const turns = new SessionTurns();
    const a = call(ctx, turns, 'q', 'sleep 150; cd /tmp/q1');
    const b = call(ctx, turns, 'q', 'pwd');
    const [ra, rb] = await Promise.all([a, b]);
    expect(ra.cwd).toBe('/tmp/q1');
    expect(rb.startCwd).toBe('/tmp/q1');
    expect(rb.cwd).toBe('/tmp/q1');
    expect(records.get('q')!.cwd).toBe('/tmp/q1');
    expect(runs.map((r) => r.command)).toEqual(['sleep 150; cd /tmp/q1', 'pwd']);
    expect(rb.queuedMs).toBeGreaterThanOrEqual(100);
  });

  it('counts time queued against the timeout: a call whose turn does not come in time runs nothing and changes nothing', async () => {
    const { pool, runs } = fakeShell();
    const { ctx, records } = fakeContext(pool);
    const turns = new SessionTurns();
    const a = call(ctx, turns, 't', 'sleep 300; cd /tmp/t1');
    const t0 = performance.now();
    const b = await call(ctx, turns, 't', 'pwd; cd /tmp/never', 100);
    expect(performance.now() - t0).toBeLessThan(250);
    expect(b.timedOut).toBe(true);
    expect(b.exitCode).toBe(124);
    expect(b.cwdObserved).toBe(false);
    expect(b.queuedMs).toBeGreaterThanOrEqual(95);
    expect(b.warnings.map((w) => w.code)).toEqual(['queue_timeout']);
    expect(b.warnings[0]!.message).toContain('did not run');
    await a;
    expect(runs.map((r) => r.command)).toEqual(['sleep 300; cd /tmp/t1']);
    expect(records.get('t')!.cwd).toBe('/tmp/t1');
    // A call after the one that gave up still waits for the one that runs, then starts where it ended.
    const c = call(ctx, turns, 't', 'sleep 100; cd /tmp/t2');
    const d = call(ctx, turns, 't', 'pwd', 2000);
    expect((await d).startCwd).toBe('/tmp/t2');
    await c;
    // The shell gets what is left of the timeout, not the whole of it.
    expect(runs.at(-1)!.timeoutMs).toBeLessThanOrEqual(1900);
  });

  it('a call that gave up waiting does not let the next call run beside the one still running', async () => {
    const { pool, runs } = fakeShell();
    const { ctx } = fakeContext(pool);
    const turns = new SessionTurns();
    const a = call(ctx, turns, 'g', 'sleep 200; cd /tmp/g1');
    const b = call(ctx, turns, 'g', 'pwd', 50);
    const c = call(ctx, turns, 'g', 'pwd');
    expect((await b).timedOut).toBe(true);
    const rc = await c;
    await a;
    expect(rc.startCwd).toBe('/tmp/g1');
    expect(runs.map((r) => r.command)).toEqual(['sleep 200; cd /tmp/g1', 'pwd']);
  });

  it('an interrupt while queued ends the wait at once and runs nothing', async () => {
    const { pool, runs } = fakeShell();
    const { ctx } = fakeContext(pool);
    const turns = new SessionTurns();
    const a = call(ctx, turns, 'i', 'sleep 150; cd /tmp/i1');
    const ac = new AbortController();
    const turn = turns.enter('box', 'i', { timeoutMs: 5000, signal: ac.signal });
    setTimeout(() => ac.abort(), 20);
    const b = await runCommand(ctx, {
      command: 'pwd',
      session: 'i',
      timeoutMs: 5000,
      mode: 'shell',
      maxOutputBytes: 1024,
      turn,
      signal: ac.signal,
    });
    turn.release();
    expect(b.interrupted).toBe(true);
    expect(b.exitCode).toBe(130);
    expect(b.warnings.map((w) => w.code)).toEqual(['queue_interrupted']);
    await a;
    expect(runs).toHaveLength(1);
  });
});
