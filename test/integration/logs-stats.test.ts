/**
 * Logs and resources against the real Docker engine: the logs of a container this test made (read, and
 * followed over the ticketed /ws/logs stream and by the CLI until Ctrl-C), a log source that does not
 * exist, and CPU figures of a busy container (`yes > /dev/null`) against an idle one, as a ratio.
 */
import { execFileSync, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { LocalServer } from '../../src/api/local-server.js';
import { CLOSE } from '../../src/api/tickets.js';
import { rejectsWith } from '../expect-error.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

const BIN = resolve(import.meta.dirname, '../../bin/sandbox-desk.js');

describe('logs and resources (docker)', () => {
  let t: TestDesk;
  let server: LocalServer;
  const busy = uniqueName('logs-busy');
  const idle = uniqueName('logs-idle');
  let busyRef = '';
  const call = async (method: string, params: unknown) => {
    const r = await fetch(`${server.origin}/api/call/${method}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${server.token}` },
      body: JSON.stringify(params),
    });
    return (await r.json()) as { ok?: unknown; error?: { code: string; message: string; hint?: string } };
  };
  /** A line on the container's own output: what `docker logs` shows (PID 1 is the init, run as root). */
  const say = (sandbox: string, line: string) =>
    t.desk.exec({ sandbox, command: `echo ${line} > /proc/1/fd/1`, user: 'root', mode: 'oneshot' });

  beforeAll(async () => {
    t = tempDesk();
    server = new LocalServer({ desk: t.desk });
    await server.listen();
    busyRef = (await t.desk.createSandbox({ name: busy, backend: 'docker' })).sandbox.backendRef!;
    await t.desk.createSandbox({ name: idle, backend: 'docker' });
  }, 180_000);
  afterAll(async () => {
    await server?.close();
    await t?.dispose();
  }, 120_000);

  it('lists the sources, saying which exist', async () => {
    const sources = await t.desk.logs.sources(busy);
    const byId = Object.fromEntries(sources.map((s) => [s.id, s]));
    expect(byId.container).toMatchObject({ kind: 'backend', exists: true });
    expect(byId.desktop).toMatchObject({ kind: 'desktop', exists: false });
    expect(byId.app).toMatchObject({ kind: 'app' });
  }, 60_000);

  it('reads the last lines of the container output', async () => {
    await say(busy, 'marker-read-1');
    await say(busy, 'marker-read-2');
    const r = await call('readLog', { sandbox: busy, tail: 1 });
    expect(r.ok).toMatchObject({ source: 'container', text: 'marker-read-2\n', tail: 1 });
  }, 60_000);

  it('refuses a log source that does not exist, listing those that do', async () => {
    const r = await call('readLog', { sandbox: busy, source: 'serial' });
    expect(r.error).toMatchObject({ code: 'not_found', message: `sandbox ${busy} has no log source "serial"` });
    expect(r.error!.hint).toMatch(/sources that exist: container/);
    const absent = await rejectsWith(t.desk.logs.read(busy, 'desktop', 5), 'not_found');
    expect(absent.message).toMatch(/does not exist/);
    expect((await call('logTicket', { sandbox: busy, source: 'nope' })).error).toMatchObject({ code: 'not_found' });
    expect((await call('readLog', { sandbox: busy, source: 'Bad/Id' })).error).toMatchObject({ code: 'invalid_input' });
  }, 60_000);

  it('follows over a single-use ticket: the tail first, then a new line', async () => {
    await say(busy, 'marker-follow-old');
    const grant = (await call('logTicket', { sandbox: busy, tail: 1 })).ok as { url: string; source: string };
    expect(grant.source).toBe('container');
    const ws = new WebSocket(grant.url);
    let text = '';
    const until = (want: string) =>
      new Promise<void>((res, rej) => {
        const check = () => (text.includes(want) ? res() : undefined);
        ws.on('message', (d: Buffer) => {
          text += d.toString('utf8');
          check();
        });
        ws.on('close', (code, reason) => rej(new Error(`closed ${code} ${reason.toString()}`)));
        check();
      });
    await until('marker-follow-old\n');
    await say(busy, 'marker-follow-new');
    await until('marker-follow-new\n');
    ws.close();
    // The same ticket again is refused.
    const again = new WebSocket(grant.url);
    const code = await new Promise<number>((res) => again.on('close', (c) => res(c)));
    expect(code).toBe(CLOSE.ticketUsed);
    // A ticket for one sandbox does not open another's log.
    const other = (await call('logTicket', { sandbox: busy })).ok as { url: string };
    const cross = new WebSocket(other.url.replace(`/ws/logs/${busy}?`, `/ws/logs/${idle}?`));
    expect(await new Promise<number>((res) => cross.on('close', (c) => res(c)))).toBe(CLOSE.ticketUnknown);
    // No ticket at all.
    const none = new WebSocket(other.url.replace(/\?ticket=.*/, ''));
    expect(await new Promise<number>((res) => none.on('close', (c) => res(c)))).toBe(CLOSE.ticketUnknown);
  }, 60_000);

  it('follows from the CLI until Ctrl-C, which ends it cleanly', async () => {
    const child = spawn(process.execPath, [BIN, 'logs', busy, '--follow', '--tail', '0'], {
      env: { ...process.env, SANDBOX_DESK_HOME: t.dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((res) => child.on('close', (c) => res(c)));
    const seen = new Promise<void>((res) =>
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('marker-cli')) res();
      }),
    );
    // Said until the follower (a slow start under load) has picked it up.
    let n = 0;
    const talk = setInterval(() => void say(busy, `marker-cli-${n++}`), 1000);
    try {
      await seen;
    } finally {
      clearInterval(talk);
    }
    child.kill('SIGINT');
    expect(await exited, err).toBe(0);
    expect(err).toBe('');
  }, 120_000);

  it('measures a busy container as busier than an idle one, and the engine itself', async () => {
    // Test-owned container: a CPU burner started detached, outside the app's exec path.
    execFileSync('docker', ['exec', '-d', busyRef, 'sh', '-c', 'yes > /dev/null']);
    await t.desk.stats.sample(busy);
    await t.desk.stats.sample(idle);
    const b = (await call('sandboxStats', { sandbox: busy })).ok as { cpuPercent: number; memoryBytes: number };
    const i = (await call('sandboxStats', { sandbox: idle })).ok as { cpuPercent: number; memoryBytes: number };
    expect(b.memoryBytes).toBeGreaterThan(0);
    expect(i.memoryBytes).toBeGreaterThan(0);
    // A ratio, not an absolute: the machine is shared. yes takes whatever core it gets; idle is ~0.
    expect(b.cpuPercent / Math.max(i.cpuPercent, 0.5)).toBeGreaterThan(5);
    expect(b.cpuPercent).toBeLessThan(100 * 64);
    const engine = (await call('engineInfo', {})).ok as { docker: { reachable: boolean; version: string; disk: { images: number } } };
    expect(engine.docker.reachable).toBe(true);
    expect(engine.docker.version).toMatch(/^\d+\.\d+/);
    expect(engine.docker.disk.images).toBeGreaterThan(0);
  }, 120_000);

  it('says a stopped sandbox has nothing to measure; its container log stays readable', async () => {
    await t.desk.stopSandbox(idle);
    await rejectsWith(t.desk.stats.sample(idle), 'sandbox_not_running');
    // A stopped container keeps its log.
    expect((await t.desk.logs.sources(idle)).find((s) => s.id === 'container')!.exists).toBe(true);
  }, 120_000);
});
