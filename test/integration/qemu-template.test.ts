/**
 * VM templates end to end against real QEMU (TCG): two VMs created from one template through the app
 * (one in-process, one with the CLI's `sandbox create --json`), each restored from the template's
 * memory, each with its own identity (hostname, machine-id, SSH host key, MAC),
 * a command whose cwd is measured, and the two diverging. The template is the run's shared one
 * (vm-template-fixture.ts): built by whichever QEMU file asks first.
 * Slow; SANDBOX_DESK_SKIP_SLOW=1 skips it.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxDesk } from '../../src/api/sandbox-desk.js';
import type { SandboxInfo } from '../../src/api/contract.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';
import { isHostKeyMismatch, sshProbe, type SshTarget } from '../../src/sandbox/qemu/ssh-transport.js';
import { templateSlug } from '../../src/sandbox/qemu/vm-template-store.js';
import { SHARED_TEMPLATE, SHARED_TEMPLATE_OPTIONS, useSharedVmTemplate } from './vm-template-fixture.js';

const SHARED_TEMPLATE_SLUG = templateSlug(SHARED_TEMPLATE.image, SHARED_TEMPLATE);

const SKIP = process.env.SANDBOX_DESK_SKIP_SLOW === '1';
const BIN = resolve(import.meta.dirname, '../../bin/sandbox-desk.js');

describe.skipIf(SKIP)('VM templates (slow: real VMs)', () => {
  let t: TestDesk;
  let desk: SandboxDesk;
  let template: string | null = null;
  const a = uniqueName('tpa');
  const b = uniqueName('tpb');
  let infoA: SandboxInfo;
  let cliB: Record<string, unknown>;
  const progressA: string[] = [];
  const cli = (...args: string[]) => {
    const r = spawnSync(process.execPath, [BIN, ...args], {
      env: { ...process.env, SANDBOX_DESK_HOME: t.dataDir },
      encoding: 'utf8',
      timeout: 400_000,
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  const sh = async (name: string, command: string, session?: string) => {
    const r = await desk.exec({ sandbox: name, command, ...(session ? { session } : {}) });
    expect(r.exitCode, r.stderr).toBe(0);
    return r;
  };

  beforeAll(async () => {
    t = tempDesk();
    desk = t.desk;
    template = await useSharedVmTemplate(t.dataDir);
    if (!template) throw new Error('the shared VM template could not be built (see the output above)');
    const t0 = Date.now();
    // Each step on stderr: on a loaded host, where a slow restore spends its time.
    const onProgress = (e: { step: string; message: string }) => {
      progressA.push(`${e.step}: ${e.message}`);
      process.stderr.write(`${((Date.now() - t0) / 1000).toFixed(1)} s ${a} ${e.step}: ${e.message}\n`);
    };
    infoA = (
      await desk.createSandbox({ name: a, backend: 'qemu', image: 'debian-test', options: { ...SHARED_TEMPLATE_OPTIONS } }, { onProgress })
    ).sandbox;
    const opts = Object.entries(SHARED_TEMPLATE_OPTIONS).flatMap(([k, v]) => ['--option', `${k}=${v}`]);
    const r = cli('sandbox', 'create', b, '--backend', 'qemu', '--image', 'debian-test', ...opts, '--json');
    expect(r.code, r.stderr).toBe(0);
    cliB = JSON.parse(r.stdout) as Record<string, unknown>;
  }, 1_500_000);

  afterAll(async () => {
    if (t) cli('service', 'stop');
    await t?.dispose();
  }, 180_000);

  it('both VMs were restored from the template, and say so (create --json: fromTemplate)', () => {
    expect(infoA.details).toMatchObject({ fromTemplate: true, template });
    expect(cliB).toMatchObject({ fromTemplate: true, sandbox: { name: b, state: 'running', fromTemplate: true, template } });
  });

  it("root's part of the identity ran by the template's waiting helper, no sudo; the helper is gone after", async () => {
    expect(progressA).toContain("identity: root's part ran by the template's waiting helper (no sudo)");
    // Its FIFOs removed, and no process holds them open (the helper shell ran the script and ended).
    for (const name of [a, b]) {
      const r = await sh(
        name,
        'test -e /run/sdesk-identity; echo "dir=$?"; sudo -n sh -c "ls -l /proc/[0-9]*/fd 2>/dev/null | grep -c sdesk-identity" || true',
      );
      expect(r.stdout).toBe('dir=1\n0\n');
    }
  });

  it('a command runs with its cwd measured, the home measured as usual', async () => {
    for (const name of [a, b]) {
      const s = uniqueName('s');
      await sh(name, 'mkdir -p /tmp/tpl-work && cd /tmp/tpl-work', s);
      const r = await sh(name, 'pwd', s);
      expect(r).toMatchObject({ stdout: '/tmp/tpl-work\n', cwd: '/tmp/tpl-work', cwdObserved: true });
      expect((await desk.inspectSandbox(name)).home).toBe('/home/agent');
    }
  });

  it('the two have distinct identities: hostname, machine-id, SSH host key, MAC', async () => {
    // One probe per value, so a missing one is named rather than shifting the others.
    const probes = [
      'hostname',
      'cat /etc/machine-id',
      // The public host key itself (the guest image has no ssh-keygen; the file is root-only there).
      'sudo -n cut -d" " -f2 /etc/ssh/ssh_host_ed25519_key.pub',
      'cat /sys/class/net/$(ip -o -4 route show default | cut -d" " -f5)/address',
    ];
    const values = async (name: string) => {
      const out: string[] = [];
      for (const p of probes) out.push((await sh(name, p)).stdout.trim());
      return out;
    };
    const [ha, ma, ka, maca] = await values(a);
    const [hb, mb, kb, macb] = await values(b);
    expect(maca).toMatch(/^52:54:00:/);
    expect(ha).toBe(`sdesk-${a}`);
    expect(hb).toBe(`sdesk-${b}`);
    expect(ma).toMatch(/^[0-9a-f]{32}$/);
    expect(ka).toMatch(/^AAAA/);
    expect(mb).not.toBe(ma);
    expect(kb).not.toBe(ka);
    expect(macb).not.toBe(maca);
    // The host pins each VM's own key: the fingerprint the guest serves is the one in its known_hosts.
    for (const [name, key] of [
      [a, ka],
      [b, kb],
    ] as const) {
      const info = await desk.inspectSandbox(name);
      const pinned = readFileSync(join(info.backendRef!, 'known_hosts'), 'utf8');
      expect(pinned.trim().split(' ')[2]).toBe(key);
    }
  });

  it("a new connection must present the copy's own key: pinned to it, it answers; pinned to the template's, it is refused", async () => {
    // The restore keeps its first SSH connection (made with the template's key) and only re-pins: this
    // proves sshd serves the new key to every later connection, without being restarted.
    const info = await desk.inspectSandbox(a);
    const dir = info.backendRef!;
    const cfg = JSON.parse(readFileSync(join(dir, 'vm.json'), 'utf8')) as { hostKeyAlias: string; user: string };
    const run = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')) as { sshPort: number };
    const templateKnownHosts = join(t.dataDir, 'qemu', 'templates', SHARED_TEMPLATE_SLUG, 'known_hosts');
    const templateKey = readFileSync(templateKnownHosts, 'utf8').trim().split(' ').slice(1, 3).join(' ');
    const pinnedToTemplate = join(t.dataDir, `template-pin-${a}`);
    writeFileSync(pinnedToTemplate, `${cfg.hostKeyAlias} ${templateKey}\n`, { mode: 0o600 });
    const target = (knownHosts: string): SshTarget => ({
      port: run.sshPort,
      loginUser: cfg.user,
      key: join(t.dataDir, 'qemu', 'id_ed25519'),
      knownHosts,
      hostKeyAlias: cfg.hostKeyAlias,
      controlPath: 'none',
    });
    const own = await sshProbe(target(join(dir, 'known_hosts')), 'echo own-key', 60_000);
    expect(own, own.stderr).toMatchObject({ code: 0, stdout: 'own-key\n' });
    const old = await sshProbe(target(pinnedToTemplate), 'echo template-key', 60_000);
    expect(old.code).toBe(255);
    expect(isHostKeyMismatch(old.stderr)).toBe(true);
    expect(old.stdout).toBe('');
  });

  it('the two diverge: a file written in one is absent in the other', async () => {
    const marker = `/home/agent/only-in-${a}`;
    await sh(a, `echo hello > ${marker}`);
    expect((await sh(a, `cat ${marker}`)).stdout).toBe('hello\n');
    const r = await desk.exec({ sandbox: b, command: `test -e ${marker}; echo $?` });
    expect(r.stdout).toBe('1\n');
  });

  it('the guest clock was set on restore (within a minute of the host)', async () => {
    const r = await sh(a, 'date -u +%s');
    expect(Math.abs(Number(r.stdout.trim()) - Date.now() / 1000)).toBeLessThan(60);
  });
});
