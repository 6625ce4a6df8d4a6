/**
 * Lease changes are on the replay timeline whichever process made them (issue 16). A real
 * `sandbox-desk serve` child — the app's core, whose API the window calls for Take control / Give
 * back — and this process's core share one data dir. Each core's replay events show the other's
 * changes once each, at the time the lease was written, naming who has control and from whom; calls
 * that change nothing (the holder asking again, a watcher's stream closing, which gives back for a
 * viewer that never held it) are no entries, and neither are the other process's changes relayed
 * onto this core's bus. No desktop: the lease is the store's, and changes without one running.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxDesk } from '../../src/api/sandbox-desk.js';
import type { CoreEvent } from '../../src/shared/core-events.js';
import type { Lease } from '../../src/shared/lease-types.js';
import type { ReplayEvent } from '../../src/shared/replay-types.js';
import { callApi, uniqueName } from './helpers.js';

const BIN = resolve(import.meta.dirname, '../../bin/sandbox-desk.js');

describe('lease changes on the replay timeline, from any process', () => {
  let home: string;
  let desk: SandboxDesk;
  let serve: ChildProcess;
  let origin: string;
  let token: string;
  const sb = uniqueName('lease');
  const v1 = uniqueName('viewer');
  const v2 = uniqueName('watcher');

  /** A method of the serve process's API, as the window calls it. */
  const api = <T>(method: string, params: Record<string, unknown>): Promise<T> => callApi<T>({ origin, token }, method, params);
  const cli = (args: string[], readyWhen?: (stderr: string) => boolean) => cliIn(home)(args, readyWhen);
  const leaseEvents = (events: ReplayEvent[]) => events.filter((e) => e.kind === 'lease').map((e) => ({ at: e.at, summary: e.summary }));

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'sdesk-replay-lease-'));
    desk = new SandboxDesk({ dataDir: home });
    await desk.createSandbox({ name: sb, backend: 'local' });
    serve = spawn(process.execPath, [BIN, 'serve', '--json'], {
      env: { ...process.env, SANDBOX_DESK_HOME: home },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const url = await new Promise<URL>((ok, fail) => {
      let buf = '';
      serve.stdout!.on('data', (c: Buffer) => {
        buf += c.toString();
        if (buf.includes('\n')) ok(new URL((JSON.parse(buf.split('\n')[0]!) as { url: string }).url));
      });
      serve.on('exit', (code) => fail(new Error(`serve exited ${code}`)));
    });
    origin = url.origin;
    token = url.searchParams.get('token')!;
  }, 60_000);
  afterAll(async () => {
    if (serve && serve.exitCode === null && serve.signalCode === null) {
      serve.kill('SIGTERM');
      await new Promise((r) => serve.once('exit', r));
    }
    await desk?.removeSandbox(sb, { force: true }).catch(() => undefined);
    await desk?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it("each core's replay shows the other's lease changes, once each, with who has control and from whom", async () => {
    // This core listens like a window does: its relay re-publishes the serve process's events on its bus.
    const listening = desk.events.listen();
    const relayed: CoreEvent[] = [];
    const sub = desk.events.onEvent((e) => {
      if (e.topic === 'lease' && e.remote) relayed.push(e);
    });
    try {
      // The window's Take control, in the serve process; then calls that change nothing.
      const taken = await api<Lease>('takeControl', { sandbox: sb, viewerId: v1 });
      expect(taken).toMatchObject({ holder: 'human', viewerId: v1 });
      expect(await api<Lease>('takeControl', { sandbox: sb, viewerId: v1 })).toEqual(taken);
      expect(await api<Lease>('giveBack', { sandbox: sb, viewerId: v2 })).toEqual(taken);
      // The serve process's lease events reached this core's bus (so relayed events were there to double).
      await expect.poll(() => relayed.length, { timeout: 10_000 }).toBeGreaterThan(0);

      expect(leaseEvents(desk.replay.events(sb).events)).toEqual([
        { at: taken.since, summary: `control: human viewer ${v1}, from the agent (taken by a viewer)` },
      ]);

      // This core gives it back (as its stream server does when the holder's stream closes).
      const back = await desk.desktop.giveBack(sb, v1);
      expect(back).toMatchObject({ holder: 'agent', viewerId: null, epoch: taken.epoch + 1 });
      const expected = [
        { at: taken.since, summary: `control: human viewer ${v1}, from the agent (taken by a viewer)` },
        { at: back.since, summary: `control: the agent, from human viewer ${v1} (given back)` },
      ];
      const remote = await api<{ events: ReplayEvent[] }>('replayEvents', { sandbox: sb });
      expect(leaseEvents(remote.events)).toEqual(expected);
      expect(leaseEvents(desk.replay.events(sb).events)).toEqual(expected);
      // One line per change in the sandbox's journal, whoever wrote it.
      const lines = readFileSync(join(home, 'recordings', sb, 'events.jsonl'), 'utf8')
        .trimEnd()
        .split('\n');
      expect(lines.map((l) => (JSON.parse(l) as ReplayEvent).kind).filter((k) => k === 'lease')).toHaveLength(2);
    } finally {
      sub.dispose();
      listening.dispose();
    }
  });

  it("while a person has control the agent's click is refused and shown to the window's core; the agent's wait goes on at the give-back", async () => {
    const person = uniqueName('person');
    const listening = desk.events.listen();
    const refusals: CoreEvent[] = [];
    const sub = desk.events.onEvent((e) => {
      if (e.topic === 'agentRefused' && e.sandbox === sb) refusals.push(e);
    });
    try {
      // The window's Take control, in the serve process.
      await api<Lease>('takeControl', { sandbox: sb, viewerId: person });

      // The agent, a third process: its click is refused before it reaches any desktop...
      const click = await cli(['desktop', 'click', sb, '100', '200', '--json']);
      expect(click.code).toBe(125);
      expect(JSON.parse(click.stdout)).toMatchObject({ error: { code: 'human_has_control' } });
      // ...and the refusal reaches this core's bus from that process (as it reaches the window), and the replay.
      await expect.poll(() => refusals.length, { timeout: 10_000 }).toBe(1);
      expect(refusals[0]).toMatchObject({ remote: true, refusal: { kind: 'click', target: { x: 100, y: 200 }, viewerId: person } });
      expect(desk.replay.events(sb).events.filter((e) => e.kind === 'action')).toMatchObject([
        {
          point: { x: 100, y: 200 },
          summary: 'click (100, 200) — refused: a person had control',
          error: expect.stringMatching(/^human_has_control: /),
        },
      ]);

      // A wait that ends with the person still in control: an answer and exit 124, not a crash.
      const short = await cli(['desktop', 'wait-control', sb, '--timeout', '300ms', '--json']);
      expect(short.code).toBe(124);
      expect(JSON.parse(short.stdout)).toMatchObject({ sandbox: sb, mayAct: false, timedOut: true, holder: 'human', viewerId: person });

      // The agent waits (20 s at most); once it says it is waiting, the person gives back.
      const waiting = cli(['desktop', 'wait-control', sb, '--timeout', '20s'], (stderr) => stderr.includes('waiting up to 20.0 s'));
      await waiting.ready;
      const gaveBackAt = Date.now();
      await api<Lease>('giveBack', { sandbox: sb, viewerId: person });
      const done = await waiting;
      const after = Date.now() - gaveBackAt;
      expect(done.code).toBe(0);
      expect(done.stdout).toMatch(new RegExp(`^the agent may act on ${sb}'s desktop \\(waited \\d+\\.\\d s\\)\n$`));
      // Event-driven: the give-back ends the wait within moments, not at the 20 s timeout (the process's exit included).
      expect(after).toBeLessThan(5000);
    } finally {
      sub.dispose();
      listening.dispose();
    }
  });
});

/**
 * A CLI call in its own process on this data dir (an agent's). `ready`: resolves once stderr
 * satisfies `readyWhen` (the process is where the test needs it), or when it exits.
 */
function cliIn(home: string) {
  return (args: string[], readyWhen?: (stderr: string) => boolean) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, SANDBOX_DESK_HOME: home },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let markReady: () => void = () => undefined;
    const ready = new Promise<void>((r) => (markReady = r));
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
      if (readyWhen?.(stderr)) markReady();
    });
    const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((r) =>
      child.once('close', (code) => {
        markReady();
        r({ code, stdout, stderr });
      }),
    );
    return Object.assign(exited, { ready });
  };
}
