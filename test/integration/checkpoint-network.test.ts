/**
 * Issue 17 §4 meets issue 15: a fork inherits its source's network policy and a restore keeps it —
 * enforced on the new container (only on its own internal network), not merely recorded.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';
import { docker } from './network/test-servers.js';

function networksOf(container: string): string[] {
  return Object.keys(JSON.parse(docker('inspect', '-f', '{{json .NetworkSettings.Networks}}', container)) as object);
}

describe('checkpoints keep the network policy (real engine)', () => {
  let t: TestDesk;
  const name = uniqueName('cknet');
  beforeAll(() => {
    t = tempDesk({ plugins: false });
  });
  afterAll(async () => {
    for (const id of t.desk.store.checkpoints.ids()) await t.desk.checkpoints.remove(id).catch(() => undefined);
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
});
