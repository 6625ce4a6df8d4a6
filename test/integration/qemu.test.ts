/**
 * The qemu backend against real QEMU (TCG here; KVM where it works), booting the debian-test image that
 * `npm run setup` builds. Slow — each boot is ~30–50 s on a 2-core host — so it can be skipped locally
 * with SANDBOX_DESK_SKIP_SLOW=1; CI runs it.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxDesk } from '../../src/api/sandbox-desk.js';
import type { ProgressEvent } from '../../src/sandbox/provider.js';
import { decodePngSize } from '../../src/desktop/png-encode.js';
import { kvmDeviceUsable } from '../../src/sandbox/qemu/accel.js';
import { imageSearchPath } from '../../src/sandbox/qemu/vm-image.js';
import { rejectsWith } from '../expect-error.js';
import { tempDesk, uniqueName, type TestDesk, qemuProcessesOf } from './helpers.js';

const SKIP = process.env.SANDBOX_DESK_SKIP_SLOW === '1';
const BIN = resolve(import.meta.dirname, '../../bin/sandbox-desk.js');

describe.skipIf(SKIP)('qemu backend (slow: real VMs; SANDBOX_DESK_SKIP_SLOW=1 skips)', () => {
  let t: TestDesk;
  let desk: SandboxDesk;
  const vm = uniqueName('vm');
  const events: ProgressEvent[] = [];
  let createWarnings: { code: string; message: string }[] = [];
  const cli = (...args: string[]) => {
    const r = spawnSync(process.execPath, [BIN, ...args], {
      env: { ...process.env, SANDBOX_DESK_HOME: t.dataDir },
      encoding: 'utf8',
      timeout: 400_000,
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr, json: () => JSON.parse(r.stdout) as Record<string, unknown> };
  };

  beforeAll(() => {
    const found = imageSearchPath('/nonexistent').some((d) => existsSync(join(d, 'debian-test', 'image.json')));
    if (!found) throw new Error('the qemu tests need the debian-test VM image: run `npm run setup` (it builds it)');
    t = tempDesk();
    desk = t.desk;
  });
  afterAll(async () => {
    await t?.dispose();
  }, 120_000);

  describe('a VM from the test image', () => {
    // A host folder shared into the VM (virtiofs), writable by the guest user.
    const shared = mkdtempSync(join(tmpdir(), 'sdesk-share-'));
    afterAll(() => rmSync(shared, { recursive: true, force: true }));
    beforeAll(async () => {
      writeFileSync(join(shared, 'from-host.txt'), 'hello from the host\n');
      chmodSync(shared, 0o777);
      // `auto` on a fresh data dir, with a CPU model that makes a broken KVM hang rather than refuse:
      // this is the path where /dev/kvm exists but guests make no progress.
      const r = await desk.createSandbox(
        {
          name: vm,
          backend: 'qemu',
          image: 'debian-test',
          options: { cpuType: 'qemu64' },
          mounts: [{ hostPath: shared, sandboxPath: '/home/agent/work' }],
        },
        { onProgress: (e) => events.push(e) },
      );
      createWarnings = r.warnings;
    }, 400_000);

    it('reports readiness in order: QEMU, serial console, SSH, cloud-init', () => {
      const steps = events.map((e) => e.step).filter((s) => ['process', 'serial', 'ssh', 'cloud-init'].includes(s));
      const firsts = ['process', 'serial', 'ssh', 'cloud-init'].map((s) => steps.lastIndexOf(s));
      expect(firsts.every((i) => i >= 0)).toBe(true);
      // after the last QEMU start, the probes pass in order
      const lastStart = events
        .map((e) => e.message)
        .lastIndexOf(events.filter((e) => e.message.startsWith('starting QEMU')).at(-1)!.message);
      const after = events.slice(lastStart).map((e) => e.step);
      expect(after.indexOf('serial')).toBeLessThan(after.lastIndexOf('ssh'));
      expect(after.lastIndexOf('ssh')).toBeLessThan(after.indexOf('cloud-init'));
      expect(events.at(-1)!.message).toMatch(/the VM is ready/);
    });

    it('uses KVM only when a guest really runs under it, and says so when it falls back', async () => {
      const info = await desk.inspectSandbox(vm);
      const device = kvmDeviceUsable();
      if (!device.usable) {
        expect(info.details?.accel).toBe('tcg');
      } else if (info.details?.accel === 'tcg') {
        // /dev/kvm opens but the guest hung or QEMU refused: the fallback is announced, never silent
        expect(createWarnings.some((w) => w.code === 'backend_warning' && /KVM/.test(w.message))).toBe(true);
        expect(events.some((e) => e.level === 'warning' && /TCG/.test(e.message))).toBe(true);
        const verdict = JSON.parse(readFileSync(join(t.dataDir, 'qemu', 'kvm-verdict.json'), 'utf8')) as { works: boolean };
        expect(verdict.works).toBe(false);
      } else {
        expect(info.details?.accel).toBe('kvm');
      }
    });

    it("exec --json -- pwd: the guest user's home, observed", () => {
      const r = cli('exec', vm, '--json', '--', 'pwd');
      expect(r.code, r.stderr).toBe(0);
      expect(r.json()).toMatchObject({ exitCode: 0, stdout: '/home/agent\n', cwd: '/home/agent', cwdObserved: true });
    });

    it('inspect --json adds accel, sshPort, pid and serialLog', () => {
      const info = cli('sandbox', 'inspect', vm, '--json').json();
      expect(info).toMatchObject({
        backend: 'qemu',
        state: 'running',
        declaredDefaultCwd: '~',
        home: '/home/agent',
        supportsStreams: true,
      });
      expect(info.accel).toMatch(/^(kvm|tcg)$/);
      expect(info.sshPort).toEqual(expect.any(Number));
      expect(info.pid).toEqual(expect.any(Number));
      expect(info.serialLog).toMatch(/serial\.log$/);
      expect(readFileSync(info.serialLog as string, 'utf8')).toMatch(/Linux version/);
    });

    it('a second app process re-adopts the running VM instead of booting another', async () => {
      const before = await desk.inspectSandbox(vm);
      const started = cli('sandbox', 'start', vm, '--json');
      expect(started.code, started.stderr).toBe(0);
      expect(started.stderr).toMatch(/already running \(pid \d+\); adopting it/);
      expect(started.json().pid).toBe(before.details?.pid);
      expect(qemuProcessesOf(before.backendRef!)).toEqual([before.details?.pid]);
      const other = t.reopen();
      const r = await other.exec({ sandbox: vm, command: 'hostname' });
      expect(r.stdout.trim()).toMatch(/^sdesk-/);
    });

    it("a shared host folder: both sides see each other's files, and a host path is translated to it", async () => {
      const r = await desk.exec({
        sandbox: vm,
        command: 'cat ~/work/from-host.txt && echo from the guest > ~/work/from-guest.txt && stat -c %U ~',
        session: uniqueName('m'),
      });
      expect(r.stdout).toBe('hello from the host\nagent\n'); // and the home stays the user's own
      expect(readFileSync(join(shared, 'from-guest.txt'), 'utf8')).toBe('from the guest\n');
      const w = await desk.exec({ sandbox: vm, command: 'pwd', session: uniqueName('m'), workdir: shared });
      expect(w.stdout).toBe('/home/agent/work\n');
      expect(w.warnings.map((x) => x.code)).toContain('host_path_translated');
    });

    it("runs as another user through sudo, with that user's measured home", async () => {
      const r = await desk.exec({ sandbox: vm, command: 'id -u; cd ~ && pwd', user: 'root', session: uniqueName('root') });
      expect(r.stdout).toBe('0\n/root\n');
    });

    it('streams: a terminal is a PTY over ssh -tt that starts where the session stands', async () => {
      await desk.exec({ sandbox: vm, command: 'cd /etc', session: 'tty' });
      const { terminal, cwd } = await desk.io.openTerminal({ sandbox: vm, session: 'tty', cols: 90, rows: 25 });
      expect(cwd).toBe('/etc');
      let screen = '';
      terminal.attach({ send: (d, done) => ((screen += d.toString()), done()), bufferedAmount: 0 });
      await expect.poll(() => screen, { timeout: 20_000 }).toMatch(/\$ $/m);
      terminal.write('pwd && stty size && cd /var\r');
      await expect.poll(() => screen, { timeout: 20_000 }).toMatch(/\r\/etc\r\n25 90\r\n/);
      await expect.poll(() => desk.listSessions(vm).find((x) => x.key === 'tty')?.cwd, { timeout: 20_000 }).toBe('/var');
      terminal.dispose();
    });

    it('the bot desktop runs in the VM through the same code as in Docker, its screen streamed over ssh', async () => {
      const status = await desk.desktop.start(vm, { geometry: '1024x768' });
      // The test image has the desktop's parts but no Chromium (too slow under TCG): said, not hidden.
      expect(status).toMatchObject({ running: true, placement: 'sandbox', display: ':20', geometry: '1024x768', missing: ['chromium'] });
      expect(status.reason).toMatch(/lacks chromium \(the desktop runs without a browser\)/);
      // As the image's display user, reached with sudo — which the login user's shell has too: not isolated.
      expect(status).toMatchObject({ displayUser: 'sdesk-display', displayIsolation: 'shared' });
      expect(status.displayIsolationReason).toMatch(/sudo/);
      const { image: png } = await desk.desktop.screenshot(vm);
      expect(decodePngSize(png)).toEqual({ width: 1024, height: 768 });
      // An agent action goes through the same prefix (xdotool in the guest).
      await desk.desktop.act(vm, { kind: 'move', x: 100, y: 200 });
      expect(await desk.desktop.pointer(vm)).toEqual({ x: 100, y: 200 });
      // The login user's shell without sudo has no X cookie for the display.
      expect(
        (await desk.exec({ sandbox: vm, command: 'DISPLAY=:20 xdotool getmouselocation', session: uniqueName('x') })).exitCode,
      ).not.toBe(0);
      // No VNC port on TCP in the guest: the screen leaves only through the ssh stream.
      const listening = await desk.exec({ sandbox: vm, command: "ss -Hltn | awk '{print $4}'", session: uniqueName('ss') });
      expect(listening.stdout).not.toMatch(/:59\d\d\b/);
      await desk.desktop.stop(vm);
    }, 180_000);

    describe.each(['shell', 'oneshot'] as const)('working directories (%s)', (mode) => {
      it('sessions keep their own cwd', async () => {
        const [a, b] = [uniqueName('a'), uniqueName('b')];
        await desk.exec({ sandbox: vm, command: 'mkdir -p /tmp/qa && cd /tmp/qa', session: a, mode });
        await desk.exec({ sandbox: vm, command: 'cd /var', session: b, mode });
        expect((await desk.exec({ sandbox: vm, command: 'pwd', session: a, mode })).stdout).toBe('/tmp/qa\n');
        expect((await desk.exec({ sandbox: vm, command: 'pwd', session: b, mode })).stdout).toBe('/var\n');
        expect((await desk.exec({ sandbox: vm, command: 'pwd', session: uniqueName('c'), mode })).stdout).toBe('/home/agent\n');
      });

      it('a deleted cwd falls back to the nearest enterable ancestor with a warning', async () => {
        const s = uniqueName('d');
        const dir = `/tmp/${uniqueName('gone')}/x`;
        await desk.exec({ sandbox: vm, command: `mkdir -p ${dir} && cd ${dir}`, session: s, mode });
        await desk.exec({ sandbox: vm, command: `rm -rf ${dir}`, session: uniqueName('other'), mode });
        const r = await desk.exec({ sandbox: vm, command: 'pwd', session: s, mode });
        expect(r.stdout).toBe(`${dir.replace(/\/x$/, '')}\n`);
        expect(r.warnings.map((w) => w.code)).toContain('cwd_missing');
      });

      it('a timed-out command is killed and changes nothing', async () => {
        const s = uniqueName('t');
        await desk.exec({ sandbox: vm, command: 'cd /tmp', session: s, mode });
        const r = await desk.exec({ sandbox: vm, command: 'cd /var && sleep 30', session: s, mode, timeoutSeconds: 2 });
        expect(r).toMatchObject({ timedOut: true, cwdObserved: false, cwd: null });
        expect((await desk.exec({ sandbox: vm, command: 'pwd', session: s, mode })).stdout).toBe('/tmp\n');
        const left = await desk.exec({ sandbox: vm, command: 'pgrep -fx "sleep 30" || true', session: uniqueName('p'), mode: 'oneshot' });
        expect(left.stdout.trim()).toBe('');
      });
    });

    it('stops cleanly over ACPI, boots again with the same pinned host key, and survives nothing else', async () => {
      const info = await desk.inspectSandbox(vm);
      const stopEvents: ProgressEvent[] = [];
      const stopped = await desk.stopSandbox(vm, { onProgress: (e) => stopEvents.push(e) });
      expect(stopped.state).toBe('stopped');
      expect(stopped.stateDetail).toBeNull();
      expect(stopEvents.map((e) => e.message)).toContain('the guest powered off');
      expect(qemuProcessesOf(info.backendRef!)).toEqual([]);
      expect(readFileSync(join(info.backendRef!, 'serial.log'), 'utf8')).toMatch(/reboot: Power down/);
      const knownHosts = readFileSync(join(info.backendRef!, 'known_hosts'), 'utf8');

      const again = await desk.startSandbox(vm);
      expect(again.state).toBe('running');
      expect(again.details?.pid).not.toBe(info.details?.pid);
      expect(readFileSync(join(info.backendRef!, 'known_hosts'), 'utf8')).toBe(knownHosts);
      expect((await desk.exec({ sandbox: vm, command: 'pwd', session: uniqueName('n') })).stdout).toBe('/home/agent\n');
      // The share is mounted again at every boot.
      expect((await desk.exec({ sandbox: vm, command: 'cat ~/work/from-guest.txt', session: uniqueName('n') })).stdout).toBe(
        'from the guest\n',
      );
    }, 400_000);

    it('notices a QEMU killed with SIGKILL: stopped, with the serial log tail, and commands refused', async () => {
      const info = await desk.inspectSandbox(vm);
      process.kill(info.details!.pid as number, 'SIGKILL');
      await new Promise((r) => setTimeout(r, 500));
      const after = await desk.inspectSandbox(vm);
      expect(after.state).toBe('stopped');
      expect(after.stateDetail).toMatch(/exited without being stopped by Sandbox Desk; serial log tail:\n/);
      expect(after.stateDetail).toMatch(/Cloud-init|login|sdesk/);
      const err = await rejectsWith(desk.exec({ sandbox: vm, command: 'true' }), 'sandbox_not_running');
      expect(err.hint).toContain('sandbox-desk sandbox start');
    });

    it('remove deletes the VM directory', async () => {
      const info = await desk.inspectSandbox(vm);
      await desk.removeSandbox(vm, { force: true });
      expect(existsSync(info.backendRef!)).toBe(false);
    });
  });

  describe('errors that quote what went wrong', () => {
    let scratch: string;
    beforeAll(() => {
      scratch = mkdtempSync(join(tmpdir(), 'sdesk-qemu-img-'));
    });
    afterAll(() => rmSync(scratch, { recursive: true, force: true }));

    it('a missing base image', async () => {
      const err = await rejectsWith(
        desk.createSandbox({ name: uniqueName('m'), backend: 'qemu', image: join(scratch, 'nope.qcow2') }),
        'image_not_found',
      );
      expect(err.message).toContain(join(scratch, 'nope.qcow2'));
      const named = await rejectsWith(
        desk.createSandbox({ name: uniqueName('m'), backend: 'qemu', image: 'no-such-image' }),
        'image_not_found',
      );
      expect(named.message).toMatch(/no VM image named no-such-image \(looked in /);
      expect(await desk.listSandboxes()).toEqual([]);
    });

    it('a corrupt base image, refused at create, leaving nothing behind', async () => {
      const bad = join(scratch, 'corrupt.qcow2');
      writeFileSync(bad, Buffer.concat([Buffer.from('QFI\xfb', 'latin1'), Buffer.alloc(4096, 0x41)]));
      const err = await rejectsWith(desk.createSandbox({ name: uniqueName('c'), backend: 'qemu', image: bad }), 'image_invalid');
      expect(err.message).toMatch(/cannot be read by qemu-img: .+/);
      expect(err.hint).toMatch(/corrupt/);
      const text = join(scratch, 'notes.img');
      writeFileSync(text, 'hello\n');
      expect(
        (await rejectsWith(desk.createSandbox({ name: uniqueName('c'), backend: 'qemu', image: text }), 'image_invalid')).message,
      ).toMatch(/is not a disk image/);
      expect(await desk.listSandboxes()).toEqual([]);
      expect(existsSync(join(t.dataDir, 'qemu', 'vms')) ? readdirSync(join(t.dataDir, 'qemu', 'vms')) : []).toEqual([]);
    });

    it('a share that is read-only or not a folder is refused at create', async () => {
      const ro = await rejectsWith(
        desk.createSandbox({
          name: uniqueName('r'),
          backend: 'qemu',
          mounts: [{ hostPath: scratch, sandboxPath: '/mnt/x', readOnly: true }],
        }),
        'invalid_input',
      );
      expect(ro.message).toMatch(/read-only shares are not supported for VMs/);
      const gone = await rejectsWith(
        desk.createSandbox({
          name: uniqueName('r'),
          backend: 'qemu',
          mounts: [{ hostPath: join(scratch, 'nope'), sandboxPath: '/mnt/x' }],
        }),
        'invalid_input',
      );
      expect(gone.message).toMatch(/is not a directory on this machine/);
      expect(await desk.listSandboxes()).toEqual([]);
    });

    it('a disk smaller than the image, and options that are not numbers', async () => {
      const small = await rejectsWith(
        desk.createSandbox({ name: uniqueName('d'), backend: 'qemu', options: { disk: '1' } }),
        'invalid_input',
      );
      expect(small.message).toMatch(/--disk 1 GiB is smaller than the image \(3\.0 GiB\)/);
      const cpus = await rejectsWith(
        desk.createSandbox({ name: uniqueName('d'), backend: 'qemu', options: { cpus: 'lots' } }),
        'invalid_input',
      );
      expect(cpus.message).toMatch(/cpus="lots"/);
      expect(await desk.listSandboxes()).toEqual([]);
    });

    it('a base image replaced after the VM was made: start refuses instead of booting a corrupt overlay', async () => {
      const base = join(scratch, 'base.qcow2');
      spawnSync('qemu-img', ['create', '-q', '-f', 'qcow2', base, '64M']);
      const name = uniqueName('b');
      await desk.createSandbox({ name, backend: 'qemu', image: base, start: false, options: { accel: 'tcg' } });
      utimesSync(base, new Date(), new Date(Date.now() + 60_000));
      const err = await rejectsWith(desk.startSandbox(name), 'image_invalid');
      expect(err.message).toContain(`base image ${base} changed since the VM was created`);
      expect((await desk.inspectSandbox(name)).state).toBe('stopped');
      await desk.removeSandbox(name);
    });

    it('a disk held by another QEMU (a start racing another process): refused, not booted twice', async () => {
      const name = uniqueName('l');
      await desk.createSandbox({ name, backend: 'qemu', start: false, options: { accel: 'tcg' } });
      const disk = join((await desk.inspectSandbox(name)).backendRef!, 'disk.qcow2');
      // A paused QEMU (-S) that holds the overlay's write lock, as a concurrent boot would.
      const holder = spawn(
        'qemu-system-x86_64',
        ['-S', '-display', 'none', '-accel', 'tcg', '-drive', `file=${disk},if=virtio,format=qcow2`],
        { stdio: 'ignore' },
      );
      try {
        await new Promise((r) => setTimeout(r, 1500));
        const err = await rejectsWith(desk.startSandbox(name), 'refused');
        expect(err.message).toMatch(/being started by another process \(its disk is locked/);
        expect(err.hint).toMatch(/adopted, never booted twice/);
      } finally {
        holder.kill('SIGKILL');
      }
      await desk.removeSandbox(name);
    });

    it('a port clash on the SSH forward', async () => {
      const server: Server = createServer();
      const port = await new Promise<number>((r) => server.listen(0, '127.0.0.1', () => r((server.address() as { port: number }).port)));
      try {
        const name = uniqueName('p');
        await desk.createSandbox({ name, backend: 'qemu', start: false, options: { sshPort: String(port), accel: 'tcg' } });
        const err = await rejectsWith(desk.startSandbox(name), 'port_in_use');
        expect(err.message).toContain(`port ${port} on 127.0.0.1 is already in use`);
        expect(err.hint).toMatch(/free port|without --option sshPort/);
        expect((await desk.inspectSandbox(name)).state).toBe('stopped');
        await desk.removeSandbox(name);
      } finally {
        server.close();
      }
    });

    it('a guest that does not answer SSH in time: the error quotes the serial log, and the VM is not left running', async () => {
      const name = uniqueName('s');
      await desk.createSandbox({ name, backend: 'qemu', start: false, options: { accel: 'tcg', bootTimeout: '8' } });
      const err = await rejectsWith(desk.startSandbox(name), 'boot_failed');
      expect(err.message).toMatch(/not ready within 8 s \(still waiting for SSH/);
      expect(err.message).toMatch(/Serial log tail \(.*serial\.log\):\n[\s\S]*\S/);
      expect(err.message).not.toContain('(no serial output)');
      const info = await desk.inspectSandbox(name);
      expect(info.state).toBe('stopped');
      expect(qemuProcessesOf(info.backendRef!)).toEqual([]);
      expect(desk.sandboxProgress(name)).toMatchObject({ kind: 'start', done: true, error: expect.stringMatching(/not ready within 8 s/) });
      await desk.removeSandbox(name);
    }, 60_000);
  });
});
