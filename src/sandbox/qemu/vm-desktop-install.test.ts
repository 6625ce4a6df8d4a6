import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rejectsWith, thrown } from '../../../test/expect-error.js';
import type { ProgressEvent } from '../provider.js';
import {
  checkDesktopNetwork,
  checkGuestOs,
  DESKTOP_STATUS_PROBE,
  desktopInstallScript,
  parseDesktopStatus,
  VM_DESKTOP_BROWSER,
  VM_DESKTOP_PACKAGES,
  waitForDesktopInstall,
} from './vm-desktop-install.js';

const DEBIAN = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\n';
const UBUNTU = 'PRETTY_NAME="Ubuntu 24.04 LTS"\nID=ubuntu\nID_LIKE=debian\n';
const FEDORA = 'NAME="Fedora Linux"\nPRETTY_NAME="Fedora Linux 40 (Cloud Edition)"\nID=fedora\n';

/** A guest at the SSH probe boundary: os-release, then the status file's successive answers. */
function guest(osRelease: string | null, statuses: string[]) {
  const seen: string[] = [];
  let i = 0;
  return {
    seen,
    probe: async (command: string) => {
      seen.push(command);
      if (command === 'cat /etc/os-release')
        return osRelease === null ? { code: 1, stdout: '', stderr: 'No such file' } : { code: 0, stdout: osRelease, stderr: '' };
      expect(command).toBe(DESKTOP_STATUS_PROBE);
      return { code: 0, stdout: statuses[Math.min(i++, statuses.length - 1)]!, stderr: '' };
    },
  };
}

const run = (g: ReturnType<typeof guest>, events: ProgressEvent[] = []) =>
  waitForDesktopInstall({ probe: g.probe, progress: (e) => events.push(e), check: () => undefined, since: () => '1.0 s', pollMs: 1 });

describe('the --desktop install in a VM', () => {
  it("installs the same packages as the debian-desktop image (build-vm-image.sh's lists)", () => {
    const script = readFileSync(join(__dirname, '../../../resources/vm/build-vm-image.sh'), 'utf8');
    const shared = /^DESKTOP_PACKAGES="([^"]+)"/m.exec(script)![1]!.split(' ');
    const extra = /debian-desktop\)[\s\S]*?EXTRA_PACKAGES="([^"]+)"/.exec(script)![1]!.split(' ');
    // dbus comes from the image's stage 2, python3 from its debootstrap list: a cloud image may lack both.
    expect([...VM_DESKTOP_PACKAGES, VM_DESKTOP_BROWSER].sort()).toEqual([...shared, ...extra, 'dbus', 'python3'].sort());
  });

  it('the guest script is valid sh and always exits 0 (a failure is reported, not a failed cloud-init)', () => {
    const r = spawnSync('sh', ['-n'], { input: desktopInstallScript() });
    expect(r.status).toBe(0);
    expect(desktopInstallScript()).not.toMatch(/exit [1-9]/);
    expect(desktopInstallScript()).toContain('APT::Status-Fd=3');
  });

  it('reads the status file: steps with apt progress, done, failed', () => {
    expect(parseDesktopStatus('\n')).toEqual({ state: 'pending' });
    expect(parseDesktopStatus('step 2 3 apt-get install (18 packages)\npmstatus:xfwm4:45.2:Installing xfwm4 (amd64)\n')).toEqual({
      state: 'step',
      step: 2,
      total: 3,
      text: 'apt-get install (18 packages)',
      percent: 45,
      detail: 'installing: Installing xfwm4 (amd64)',
    });
    expect(parseDesktopStatus('step 2 3 x\ndlstatus:3:12.5:Retrieving file 3 of 120\n')).toMatchObject({
      percent: 13,
      detail: 'downloading: Retrieving file 3 of 120',
    });
    // apt's progress file outlives its step: step 3 does not carry the install's last percentage.
    expect(parseDesktopStatus('step 3 3 the display user\npmstatus:chromium:99.1:Installed chromium (amd64)\n')).toMatchObject({
      step: 3,
      percent: null,
      detail: null,
    });
    expect(parseDesktopStatus('done browser=chromium\n')).toEqual({ state: 'done', browser: 'chromium' });
    expect(parseDesktopStatus('done browser=none\n')).toEqual({ state: 'done', browser: null });
    expect(parseDesktopStatus('failed mirror Err:1 http://deb.debian.org/debian bookworm InRelease\n')).toEqual({
      state: 'failed',
      kind: 'mirror',
      reason: 'Err:1 http://deb.debian.org/debian bookworm InRelease',
    });
  });

  it('shows each step as progress, then reports the browser it installed', async () => {
    const events: ProgressEvent[] = [];
    const g = guest(DEBIAN, [
      '',
      'step 1 3 apt-get update\n',
      'step 2 3 apt-get install\ndlstatus:1:10:Retrieving file 1 of 9\n',
      'step 2 3 apt-get install\npmstatus:chromium:80:Installing chromium\n',
      'done browser=chromium\n',
    ]);
    expect(await run(g, events)).toEqual({ browser: 'chromium' });
    expect(events.map((e) => e.message)).toEqual([
      'desktop step 1/3: apt-get update (1.0 s)',
      'desktop step 2/3: apt-get install — 10% (downloading: Retrieving file 1 of 9) (1.0 s)',
      'desktop step 2/3: apt-get install — 80% (installing: Installing chromium) (1.0 s)',
      "the desktop's packages are installed (with chromium) (after 1.0 s)",
    ]);
    expect(events.every((e) => e.step === 'desktop')).toBe(true);
  });

  it('a step begun and over between two reads is still told, in order', async () => {
    const events: ProgressEvent[] = [];
    const steps = '\n#steps\nstep 1 3 apt-get update\nstep 2 3 apt-get install\n';
    const g = guest(DEBIAN, [
      `step 2 3 apt-get install\ndlstatus:1:10:Retrieving file 1 of 9\n${steps}`,
      `done browser=chromium\n${steps}step 3 3 the display user\n`,
    ]);
    expect(await run(g, events)).toEqual({ browser: 'chromium' });
    expect(events.map((e) => e.message)).toEqual([
      'desktop step 1/3: apt-get update (1.0 s)',
      'desktop step 2/3: apt-get install — 10% (downloading: Retrieving file 1 of 9) (1.0 s)',
      'desktop step 3/3: the display user (1.0 s)',
      "the desktop's packages are installed (with chromium) (after 1.0 s)",
    ]);
  });

  it('an Ubuntu guest without a real chromium package: done, and said to have no browser', async () => {
    const events: ProgressEvent[] = [];
    expect(await run(guest(UBUNTU, ['done browser=none\n']), events)).toEqual({ browser: null });
    expect(events.at(-1)!.message).toMatch(/without a browser/);
  });

  it('refuses a guest that is not Debian/Ubuntu-based, naming what its os-release says (before any install wait)', async () => {
    const g = guest(FEDORA, ['step 1 3 never read\n']);
    const err = await rejectsWith(run(g), 'invalid_input');
    expect(err.message).toBe(
      "--desktop needs a Debian- or Ubuntu-based guest; this VM's is not: its /etc/os-release says Fedora Linux 40 (Cloud Edition)",
    );
    expect(g.seen).toEqual(['cat /etc/os-release']);
    expect(thrown(() => checkGuestOs(null)).message).toMatch(/it has no readable \/etc\/os-release/);
    expect(() => checkGuestOs(UBUNTU)).not.toThrow();
  });

  it("refuses with apt's own reason when the guest has no package mirror", async () => {
    const err = await rejectsWith(
      run(
        guest(DEBIAN, [
          'step 1 3 apt-get update\n',
          'failed mirror Err:1 http://deb.debian.org/debian bookworm InRelease Temporary failure resolving\n',
        ]),
      ),
      'refused',
    );
    expect(err.message).toMatch(/the guest has no reachable package mirror.*Temporary failure resolving/);
    expect(err.hint).toMatch(/debian-desktop/);
  });

  it('a failed install says so with its tail; the guest-side os check is reported too', async () => {
    const install = await rejectsWith(run(guest(DEBIAN, ['failed install E: Unable to locate package xfwm4\n'])), 'boot_failed');
    expect(install.message).toMatch(/installing the desktop's packages in the guest failed: E: Unable to locate package xfwm4/);
    const os = await rejectsWith(run(guest(DEBIAN, ['failed os Alpine has no apt-get\n'])), 'invalid_input');
    expect(os.message).toMatch(/Alpine has no apt-get/);
  });

  it('the wait ends when the readiness check throws (VM gone, cancelled, deadline)', async () => {
    const g = guest(DEBIAN, ['step 1 3 apt-get update\n']);
    const err = await waitForDesktopInstall({
      probe: g.probe,
      progress: () => undefined,
      since: () => '',
      pollMs: 1,
      check: () => {
        throw new Error('deadline');
      },
    }).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toBe('deadline');
  });

  it('network policy offline or allow: refused up front, open: allowed', () => {
    for (const mode of ['offline', 'allow'] as const) {
      const err = thrown(() => checkDesktopNetwork(mode, 'vm1'));
      expect(err.code).toBe('refused');
      expect(err.message).toContain(`network policy ${mode}`);
      expect(err.hint).toMatch(/--image debian-desktop/);
    }
    expect(() => checkDesktopNetwork('open', 'vm1')).not.toThrow();
  });
});
