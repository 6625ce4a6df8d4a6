import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { rejectsWith, thrown } from '../../../test/expect-error.js';
import { checkBaseUnchanged, diskFingerprint, inspectDisk, resolveBaseImage } from './vm-image.js';

const dir = mkdtempSync(join(tmpdir(), 'sdesk-vm-image-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('base images', () => {
  it('reads a qcow2 with qemu-img, and a path is taken as a disk booted through its own bootloader', async () => {
    const disk = join(dir, 'small.qcow2');
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', disk, '64M']);
    expect(await inspectDisk(disk)).toEqual({ format: 'qcow2', virtualSize: 64 * 2 ** 20 });
    expect(await resolveBaseImage(disk, dir)).toMatchObject({ name: null, disk, format: 'qcow2', kernel: null, initrd: null });
  });

  it('refuses what is not a disk image, saying what it is', async () => {
    const junk = join(dir, 'notes.img');
    writeFileSync(junk, 'hello\n');
    expect((await rejectsWith(inspectDisk(junk), 'image_invalid')).message).toMatch(/is not a disk image \(6 bytes/);
    expect((await rejectsWith(inspectDisk(join(dir, 'nope.qcow2')), 'image_not_found')).hint).toMatch(/debian-test/);
  });

  it('an overlay only boots over the exact base it was made on', () => {
    const disk = join(dir, 'base.qcow2');
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', disk, '16M']);
    const fingerprint = diskFingerprint(disk)!;
    expect(() => checkBaseUnchanged({ disk, fingerprint })).not.toThrow();
    utimesSync(disk, new Date(), new Date(Date.now() + 60_000)); // rebuilt in place
    const changed = thrown(() => checkBaseUnchanged({ disk, fingerprint }));
    expect(changed.code).toBe('image_invalid');
    expect(changed.message).toMatch(/changed since the VM was created/);
    expect(changed.hint).toMatch(/create it again/);
    rmSync(disk);
    expect(thrown(() => checkBaseUnchanged({ disk, fingerprint })).code).toBe('image_not_found');
  });
});

/** Debian 12's /etc/pam.d/sshd (openssh-server 9.2), its PAM lines. */
const BOOKWORM_PAM_SSHD = `@include common-auth
account    required     pam_nologin.so
@include common-account
session [success=ok ignore=ignore module_unknown=ignore default=bad]        pam_selinux.so close
session    required     pam_loginuid.so
session    optional     pam_keyinit.so force revoke
@include common-session
session    optional     pam_motd.so  motd=/run/motd.dynamic
session    optional     pam_motd.so noupdate
session    optional     pam_mail.so standard noenv # [1]
session    required     pam_limits.so
session    required     pam_env.so # [1]
session    required     pam_env.so user_readenv=1 envfile=/etc/default/locale
session [success=ok ignore=ignore module_unknown=ignore default=bad]        pam_selinux.so open
@include common-password
`;

describe("the guest image's login config (build-vm-image.sh)", () => {
  const script = readFileSync(join(import.meta.dirname, '../../../resources/vm/build-vm-image.sh'), 'utf8');

  it('turns off pam_motd and pam_mail for SSH logins (programs started per connection under TCG), nothing else', () => {
    // The script's own lines (the edit and its guard), run against a copy of Debian's file.
    const lines = script.split('\n');
    const start = lines.findIndex((l) => l.startsWith('sed -i -E') && l.includes('pam_(motd|mail)'));
    expect(start).toBeGreaterThan(0);
    const root = join(dir, 'rootfs');
    mkdirSync(join(root, 'etc/pam.d'), { recursive: true });
    writeFileSync(join(root, 'etc/pam.d/sshd'), BOOKWORM_PAM_SSHD);
    const r = spawnSync('bash', ['-euc', lines.slice(start, start + 4).join('\n')], {
      env: { ...process.env, ROOTFS: root },
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
    const after = readFileSync(join(root, 'etc/pam.d/sshd'), 'utf8').split('\n');
    const active = (l: string) => l !== '' && !l.startsWith('#');
    expect(after.filter(active).join('\n')).not.toMatch(/pam_motd|pam_mail/);
    // Every other line is as Debian ships it: auth, account, limits, env, loginuid, selinux stay on.
    expect(after.filter(active)).toEqual(BOOKWORM_PAM_SSHD.split('\n').filter((l) => active(l) && !/pam_motd|pam_mail/.test(l)));
    expect(after.filter((l) => l.startsWith('# sandbox-desk: off'))).toHaveLength(3);
  });

  it('sudo runs without a pty of its own, in a sudoers drop-in the build checks with visudo', () => {
    expect(script).toMatch(/'Defaults !use_pty' > "\$ROOTFS\/etc\/sudoers\.d\/10-sandbox-desk"/);
    expect(script).toContain('chmod 0440 "$ROOTFS/etc/sudoers.d/10-sandbox-desk"');
    expect(script).toContain('in_chroot visudo -c -q -f /etc/sudoers.d/10-sandbox-desk');
  });
});
