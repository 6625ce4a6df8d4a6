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
});
