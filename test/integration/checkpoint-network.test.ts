/**
 * Issue 17 §4 meets issue 15: a fork inherits its source's network policy and a restore keeps it —
 * enforced on the new container (only on its own internal network), not merely recorded.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';
import { CLIENT, docker, startTestServers, type TestServers } from './network/test-servers.js';

function networksOf(container: string): string[] {
  return Object.keys(JSON.parse(docker('inspect', '-f', '{{json .NetworkSettings.Networks}}', container)) as object);
}

describe('checkpoints keep the network policy (real engine)', () => {
  let t: TestDesk;
  let srv: TestServers;
  const name = uniqueName('cknet');
  beforeAll(() => {
    srv = startTestServers();
    t = tempDesk({ plugins: false });
  });
  afterAll(async () => {
    for (const id of t.desk.store.checkpoints.ids()) await t.desk.checkpoints.remove(id).catch(() => undefined);
    srv?.dispose(); // first: a teardown that throws below must not leave the servers running
    await t.dispose();
  });

  it('an offline sandbox forked is offline; restored, it stays offline', async () => {
    await t.desk.createSandbox({ name, backend: 'docker', network: 'offline' });
    const cp = await t.desk.checkpoints.checkpoint({ sandbox: name });
    const fork = await t.desk.checkpoints.fork({ sandbox: name, checkpoint: cp.checkpoint.id, as: `${name}-f` });
    const forked = await t.desk.inspectSandbox(fork.sandboxes[0]!.name);
    expect(forked.network?.mode).toBe('offline');
    const nets = networksOf(forked.backendRef!);
    expect(nets).toHaveLength(1);
    expect(docker('network', 'inspect', '-f', '{{.Internal}}', nets[0]!)).toBe('true');

    await t.desk.checkpoints.restore(name, cp.checkpoint.id);
    const restored = await t.desk.inspectSandbox(name);
    expect(restored.network?.mode).toBe('offline');
    const after = networksOf(restored.backendRef!);
    expect(after).toHaveLength(1);
    expect(docker('network', 'inspect', '-f', '{{.Internal}}', after[0]!)).toBe('true');
  }, 300_000);

  it('an allow sandbox forked and restored reaches the allowed server through the proxy, each container with its own relay', async () => {
    const src = uniqueName('ckallow');
    await t.desk.createSandbox({ name: src, backend: 'docker', network: 'allow', allow: [`${srv.ip.a}:8000`] });
    const get = async (sandbox: string): Promise<string> =>
      (
        await t.desk.exec({ sandbox, command: `${CLIENT}\nvia_proxy ${srv.ip.a} 8000; via_proxy ${srv.ip.b} 8000`, timeoutSeconds: 60 })
      ).stdout.trim();
    const cp = await t.desk.checkpoints.checkpoint({ sandbox: src });
    const fork = await t.desk.checkpoints.fork({ sandbox: src, checkpoint: cp.checkpoint.id, as: `${src}-f` });
    const forked = fork.sandboxes[0]!.name;
    expect((await t.desk.inspectSandbox(forked)).network).toEqual({ mode: 'allow', allow: [`${srv.ip.a}:8000`] });
    const [fa, fb] = (await get(forked)).split('\n');
    expect(fa).toMatch(/^HTTP\/1.1 200 OK server-a$/);
    expect(fb).toMatch(/^HTTP\/1.1 403 /);

    // A restore recreates the container: its relay must follow it into the new one's namespace.
    await t.desk.checkpoints.restore(src, cp.checkpoint.id);
    const restored = await t.desk.inspectSandbox(src);
    const id = docker('inspect', '-f', '{{.Id}}', restored.backendRef!);
    const relay = `${docker('inspect', '-f', '{{.Name}}', restored.backendRef!).replace(/^\//, '')}-egress`;
    expect(docker('inspect', '-f', '{{.HostConfig.NetworkMode}}', relay)).toBe(`container:${id}`);
    expect((await get(src)).split('\n')[0]).toMatch(/^HTTP\/1.1 200 OK server-a$/);
  }, 300_000);
});
