/**
 * Network policy against the real engine: two HTTP servers in their own containers on a network this
 * test creates, one allowed and one not; a docker sandbox reaches the allowed one through the egress
 * proxy and is refused on the other, each line on the log; the ways around the proxy (a raw IP, UDP,
 * IPv6, straight to the address) reach nothing; switching the mode while it runs takes effect on the
 * next connection; `offline` reaches nothing; the proxy killed fails closed and is restarted.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CoreEvent } from '../../src/shared/core-events.js';
import { rejectsWith } from '../expect-error.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';
import { CLIENT, docker, startTestServers, type TestServers } from './network/test-servers.js';

describe('network policy of a docker sandbox (real engine, the test’s own containers)', () => {
  let t: TestDesk;
  let srv: TestServers;
  const events: CoreEvent[] = [];
  const name = uniqueName('net');

  const sh = async (script: string): Promise<string> => {
    const r = await t.desk.exec({ sandbox: name, command: `${CLIENT}\n${script}`, timeoutSeconds: 60 });
    return r.stdout.trim();
  };

  beforeAll(async () => {
    srv = startTestServers();
    t = tempDesk();
    t.desk.events.onEvent((e) => events.push(e));
    await t.desk.createSandbox({ name, backend: 'docker', network: 'allow', allow: [`${srv.ip.a}:8000`] });
  });
  afterAll(async () => {
    srv?.dispose(); // first: a teardown that throws below must not leave the servers running
    await t?.dispose();
  });

  it('inspect and list show the policy; the sandbox is only on its own internal network, beside its relay', async () => {
    const info = await t.desk.inspectSandbox(name);
    expect(info.network).toEqual({ mode: 'allow', allow: [`${srv.ip.a}:8000`] });
    expect((await t.desk.listSandboxes()).find((s) => s.name === name)?.network?.mode).toBe('allow');
    const nets = Object.keys(JSON.parse(docker('inspect', '-f', '{{json .NetworkSettings.Networks}}', info.backendRef!)) as object);
    expect(nets).toEqual([expect.stringMatching(/-net$/)]);
    expect(docker('network', 'inspect', '-f', '{{.Internal}}', nets[0]!)).toBe('true');
    // The relay has no network of its own: it lives in the sandbox's namespace, where the proxy address is.
    const id = docker('inspect', '-f', '{{.Id}}', info.backendRef!);
    const relay = `${docker('inspect', '-f', '{{.Name}}', info.backendRef!).replace(/^\//, '')}-egress`;
    expect(docker('inspect', '-f', '{{.HostConfig.NetworkMode}}', relay)).toBe(`container:${id}`);
    expect(await sh('echo "$HTTP_PROXY"')).toBe('http://127.0.0.1:3128');
  });

  it('a restart of the sandbox takes its relay along: the proxy address is back in the new namespace', async () => {
    await t.desk.stopSandbox(name);
    await t.desk.startSandbox(name);
    expect(await sh(`via_proxy ${srv.ip.a} 8000`)).toMatch(/^HTTP\/1.1 200 OK server-a$/);
  });

  it('the allowed server is reached through the proxy (plain HTTP and CONNECT), the other refused; each on the log', async () => {
    const out = await sh(
      `via_proxy ${srv.ip.a} 8000; via_connect ${srv.ip.a} 8000; via_proxy ${srv.ip.b} 8000; via_connect ${srv.ip.b} 8000`,
    );
    const [a1, a2, b1, b2] = out.split('\n');
    expect(a1).toMatch(/^HTTP\/1.1 200 OK server-a$/);
    expect(a2).toMatch(/^HTTP\/1.1 200 Connection Established server-a$/);
    expect(b1).toMatch(/^HTTP\/1.1 403 /);
    expect(b2).toMatch(/^HTTP\/1.1 403 /);
    const log = t.desk.network.log(name).slice(-4);
    expect(log.map((e) => [e.host, e.port, e.verdict, e.kind])).toEqual([
      [srv.ip.a, 8000, 'allowed', 'http'],
      [srv.ip.a, 8000, 'allowed', 'connect'],
      [srv.ip.b, 8000, 'denied', 'http'],
      [srv.ip.b, 8000, 'denied', 'connect'],
    ]);
    expect(log[2]!.reason).toContain('raw IP');
  });

  it('around the proxy nothing gets out: straight to an address, a DNS name, a DoH endpoint, UDP, IPv6', async () => {
    const out = await sh(
      [
        `direct ${srv.ip.a} 8000`,
        `direct ${srv.bridgeIp.a} 8000`,
        `getent hosts example.com >/dev/null && echo RESOLVED || echo NO-DNS`,
        `via_connect 1.1.1.1 443`,
        `via_connect dns.google 443`,
        `for i in 1 2 3; do echo "from-${name}" > /dev/udp/${srv.ip.a}/9999; done 2>/dev/null; echo udp-sent`,
        `direct fd00::1 8000`,
        `via_connect '[2001:db8::1]' 443`,
      ].join('; '),
    );
    const lines = out.split('\n');
    expect(lines[0]).not.toContain('server-a');
    expect(lines[1]).not.toContain('server-a');
    expect(lines[2]).toBe('NO-DNS');
    expect(lines[3]).toMatch(/^HTTP\/1.1 403/);
    expect(lines[4]).toMatch(/^HTTP\/1.1 403/);
    expect(lines[6]).not.toContain('server-a');
    expect(lines[7]).toMatch(/^HTTP\/1.1 403/);
    const denied = t.desk.network
      .log(name)
      .filter((e) => e.verdict === 'denied')
      .map((e) => e.host);
    expect(denied).toEqual(expect.arrayContaining(['1.1.1.1', 'dns.google', '2001:db8::1']));
    // A control datagram from this machine arrives; none of the sandbox's did.
    docker('exec', srv.container.b, 'bash', '-c', `echo control-${name} > /dev/udp/${srv.ip.a}/9999`);
    for (let i = 0; i < 50 && !docker('logs', srv.container.a).includes(`control-${name}`); i++)
      await new Promise((r) => setTimeout(r, 200));
    expect(docker('logs', srv.container.a)).toContain(`control-${name}`);
    expect(docker('logs', srv.container.a)).not.toContain(`from-${name}`);
  });

  it('changing the list and the mode while it runs takes effect on the next connection', async () => {
    await t.desk.sandboxNetwork(name, { allow: [`${srv.ip.b}:8000`] });
    expect(await sh(`via_proxy ${srv.ip.b} 8000`)).toMatch(/200 OK server-b$/);
    await t.desk.sandboxNetwork(name, { deny: [`${srv.ip.b}:8000`] });
    expect(await sh(`via_proxy ${srv.ip.b} 8000`)).toMatch(/^HTTP\/1.1 403/);

    expect((await t.desk.sandboxNetwork(name, { mode: 'offline' })).mode).toBe('offline');
    const off = await sh(
      `echo "proxy=[$HTTP_PROXY]"; HTTP_PROXY=http://127.0.0.1:3128 via_proxy ${srv.ip.a} 8000; direct ${srv.ip.a} 8000; direct ${srv.bridgeIp.a} 8000`,
    );
    expect(off).toContain('proxy=[]');
    expect(off).not.toContain('server-a');

    await t.desk.sandboxNetwork(name, { mode: 'open' });
    expect(await sh(`direct ${srv.bridgeIp.a} 8000`)).toBe('server-a');

    await t.desk.sandboxNetwork(name, { mode: 'allow' });
    expect(await sh(`direct ${srv.bridgeIp.a} 8000`)).not.toContain('server-a');
    expect(await sh(`via_proxy ${srv.ip.a} 8000`)).toMatch(/200 OK server-a$/);
    expect(events.filter((e) => e.topic === 'network' && e.kind === 'policy').length).toBeGreaterThanOrEqual(5);
  });

  it('the proxy killed: the sandbox has no way out (fails closed); the app restarts it and says so', async () => {
    const pid = Number(readFileSync(join(t.dataDir, 'network', 'proxy.pid'), 'utf8'));
    process.kill(pid, 'SIGKILL');
    // Until the restart, nobody holds the sandbox's proxy address: the connection is refused (or, caught
    // between the kill and the relay seeing its link gone, ends with nothing).
    const during = await sh(`via_proxy ${srv.ip.a} 8000`);
    for (let i = 0; i < 100 && !events.some((e) => e.topic === 'network' && e.kind === 'proxy-restarted'); i++)
      await new Promise((r) => setTimeout(r, 200));
    const restarted = events.find((e) => e.topic === 'network' && e.kind === 'proxy-restarted');
    expect(restarted).toMatchObject({ sandbox: name, message: expect.stringContaining(`pid ${pid}`) });
    expect(during === 'FAILED connect' || during === 'FAILED empty' || during.includes('200 OK server-a')).toBe(true);
    expect(await sh(`via_proxy ${srv.ip.a} 8000`)).toMatch(/200 OK server-a$/);
  });

  it('connection events reach the bus from the log', async () => {
    const before = events.length;
    await sh(`via_proxy ${srv.ip.b} 8000`);
    const mine = (x: CoreEvent): boolean => x.topic === 'network' && x.kind === 'connection' && x.entry?.host === srv.ip.b;
    for (let i = 0; i < 50 && !events.slice(before).some(mine); i++) await new Promise((r) => setTimeout(r, 200));
    const e = events.slice(before).find(mine);
    expect(e).toMatchObject({ sandbox: name, entry: { host: srv.ip.b, verdict: 'denied' } });
  });

  it('a bad entry, a mode a backend cannot enforce, and --allow without allow are refused before anything is made', async () => {
    expect((await rejectsWith(t.desk.sandboxNetwork(name, { allow: ['*.bad.*'] }), 'invalid_input')).message).toMatch(/wildcard/);
    const local = await rejectsWith(t.desk.createSandbox({ name: uniqueName('net'), backend: 'local', network: 'offline' }), 'unsupported');
    expect(local.message).toMatch(/local backend cannot enforce/);
    const both = await rejectsWith(
      t.desk.createSandbox({ name: uniqueName('net'), backend: 'docker', network: 'offline', allow: ['example.com'] }),
      'invalid_input',
    );
    expect(both.message).toMatch(/--allow only applies/);
  });

  it('an offline sandbox made offline reaches nothing; removal takes its network and relay along', async () => {
    const off = uniqueName('net');
    const { sandbox } = await t.desk.createSandbox({ name: off, backend: 'docker', network: 'offline' });
    const r = await t.desk.exec({
      sandbox: off,
      command: `${CLIENT}\ndirect ${srv.ip.a} 8000; direct ${srv.bridgeIp.a} 8000; getent hosts example.com || echo NO-DNS`,
    });
    expect(r.stdout).not.toContain('server-a');
    expect(r.stdout).toContain('NO-DNS');
    const netName = Object.keys(
      JSON.parse(docker('inspect', '-f', '{{json .NetworkSettings.Networks}}', sandbox.backendRef!)) as object,
    )[0]!;
    await t.desk.removeSandbox(off, { force: true });
    expect(() => docker('network', 'inspect', netName)).toThrow();
  });
});
