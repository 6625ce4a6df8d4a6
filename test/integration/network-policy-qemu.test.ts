/**
 * Network policy of a QEMU sandbox (slow: one real VM under TCG): slirp with restrict=on and a guestfwd
 * to the same egress proxy. The guest reaches the allowed test server through the proxy, is refused on
 * the other, reaches nothing around it; the allow list changes live, the mode at the next boot.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { imageSearchPath } from '../../src/sandbox/qemu/vm-image.js';
import { rejectsWith } from '../expect-error.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';
import { CLIENT, startTestServers, type TestServers } from './network/test-servers.js';
import { SHARED_TEMPLATE_OPTIONS, useSharedVmTemplate } from './vm-template-fixture.js';

const SKIP = process.env.SANDBOX_DESK_SKIP_SLOW === '1';

describe.skipIf(SKIP)('network policy of a qemu sandbox (slow: a real VM)', () => {
  let t: TestDesk;
  let srv: TestServers;
  const vm = uniqueName('netvm');
  const sh = async (script: string): Promise<string> =>
    (await t.desk.exec({ sandbox: vm, command: `${CLIENT}\n${script}`, timeoutSeconds: 120 })).stdout.trim();

  beforeAll(async () => {
    const found = imageSearchPath('/nonexistent').some((d) => existsSync(join(d, 'debian-test', 'image.json')));
    if (!found) throw new Error('the qemu tests need the debian-test VM image: run `npm run setup` (it builds it)');
    srv = startTestServers();
    t = tempDesk();
    // This file tests the policy, not booting: the first start is restored from the run's shared VM
    // template (its boot happens once per run). The stop and start below still boot it cold, with the
    // new mode. A generous boot timeout: TCG on a shared 2-core machine under load.
    await useSharedVmTemplate(t.dataDir);
    await t.desk.createSandbox({
      name: vm,
      backend: 'qemu',
      image: 'debian-test',
      options: { ...SHARED_TEMPLATE_OPTIONS, bootTimeout: '1200' },
      network: 'allow',
      allow: [`${srv.ip.a}:8000`],
    });
  }, 1_500_000);
  afterAll(async () => {
    srv?.dispose(); // first: a teardown that throws below must not leave the servers running
    await t?.dispose();
  }, 180_000);

  it('reaches the allowed server through the proxy, is refused on the other, reaches nothing around it', async () => {
    const out = (
      await sh(`via_proxy ${srv.ip.a} 8000; via_proxy ${srv.ip.b} 8000; direct ${srv.ip.a} 8000; getent hosts example.com || echo NO-DNS`)
    ).split('\n');
    expect(out[0]).toMatch(/200 OK server-a$/);
    expect(out[1]).toMatch(/^HTTP\/1.1 403/);
    expect(out[2]).not.toContain('server-a');
    expect(out[3]).toBe('NO-DNS');
    expect(t.desk.network.log(vm).map((e) => [e.host, e.verdict])).toEqual([
      [srv.ip.a, 'allowed'],
      [srv.ip.b, 'denied'],
    ]);
  });

  it('the allow list changes while it runs; the mode is refused while it runs, and applies at the next boot', async () => {
    await t.desk.sandboxNetwork(vm, { allow: [`${srv.ip.b}:8000`] });
    expect(await sh(`via_proxy ${srv.ip.b} 8000`)).toMatch(/200 OK server-b$/);
    const err = await rejectsWith(t.desk.sandboxNetwork(vm, { mode: 'offline' }), 'unsupported');
    expect(err.message).toMatch(/cannot change the network mode of a running sandbox/);
    await t.desk.stopSandbox(vm);
    await t.desk.sandboxNetwork(vm, { mode: 'offline' });
    await t.desk.startSandbox(vm);
    const off = await sh(
      `echo "proxy=[$HTTP_PROXY]"; HTTP_PROXY=http://10.0.2.100:3128 via_proxy ${srv.ip.a} 8000; direct ${srv.ip.a} 8000`,
    );
    expect(off).toContain('proxy=[]');
    expect(off).not.toContain('server-a');
  }, 1_500_000);
});
