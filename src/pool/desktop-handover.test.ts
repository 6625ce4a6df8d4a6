import { createServer } from 'node:net';
import { lstatSync, mkdtempSync, readFileSync, readlinkSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { desktopLayout } from '../desktop/desktop-runtime.js';
import { fakeXServer } from '../desktop/test/fake-x.js';
import { fakeDesktopGroup } from '../desktop/test/frozen-group.js';
import { execRun, handOverRestoredDesktop } from './desktop-handover.js';

/**
 * A desktop template's hand-over (a VM restored from it, src/api/template-desktop-takeup.ts): the
 * template's desktop folder moved to the copy's name and its X cookie re-keyed, in one command —
 * run here on a folder of this machine with a fake X server's cookie handling.
 */
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function fakeX(hostname: string) {
  const dir = mkdtempSync(join(tmpdir(), 'sdesk-handover-'));
  dirs.push(dir);
  return fakeXServer(dir, hostname);
}

describe("a desktop template's hand-over", { timeout: 30_000 }, () => {
  it("the create's hand-over: the template's folder moved to the copy's name and its cookie re-keyed in one command", async () => {
    const { env, layout, server } = fakeX('sdesk-copy');
    // The desktop's folder as the template left it: named after the build VM.
    const old = desktopLayout(env, '.template-1', 20);
    renameSync(layout.dir, old.dir);
    const template = 'ab'.repeat(16);
    writeFileSync(server, `${template}\n`);
    writeFileSync(old.xauthority, `sdesk-.template-1/unix:20 MIT-MAGIC-COOKIE-1 ${template}\n`);
    // Xvnc's RFB socket (any Unix socket will do): the hand-over checks it is there after the move.
    const rfb = createServer();
    await new Promise<void>((r) => rfb.listen(old.socket, r));
    const commands: string[][] = [];
    const hash = await handOverRestoredDesktop(
      async (argv) => {
        commands.push(argv);
        return execRun(env, { timeoutMs: 20_000 })(argv);
      },
      env,
      '.template-1',
      'copy',
      20,
    );
    expect(commands).toHaveLength(1);
    expect(hash).toMatch(/^[0-9a-f]{16}$/);
    expect(readlinkSync(old.dir)).toBe(layout.dir);
    expect(lstatSync(layout.dir).isDirectory()).toBe(true);
    const [entry, , cookie] = readFileSync(layout.xauthority, 'utf8').trim().split(' ');
    expect(entry).toBe('sdesk-copy/unix:20');
    expect(cookie).not.toBe(template);
    expect(readFileSync(server, 'utf8')).toContain(cookie);
    rfb.close();
  });

  it('the hand-over of a folder without its RFB socket: exit 3, said', async () => {
    const { env, layout, server } = fakeX('sdesk-copy');
    writeFileSync(server, `${'ab'.repeat(16)}\n`);
    writeFileSync(layout.xauthority, `sdesk-.template-1/unix:20 MIT-MAGIC-COOKIE-1 ${'ab'.repeat(16)}\n`);
    renameSync(layout.dir, desktopLayout(env, '.template-1', 20).dir);
    await expect(handOverRestoredDesktop(execRun(env, { timeoutMs: 20_000 }), env, '.template-1', 'copy', 20)).rejects.toThrow(
      /folder could not follow the sandbox's new name .*: no RFB socket in .*sandbox-desk-desktop-copy/,
    );
  });

  it('the desktop the template froze runs again after the hand-over, and after a failed one', async () => {
    for (const socket of [true, false]) {
      const { env, layout, server } = fakeX('sdesk-copy');
      const old = desktopLayout(env, '.template-1', 20);
      renameSync(layout.dir, old.dir);
      writeFileSync(server, `${'ab'.repeat(16)}\n`);
      writeFileSync(old.xauthority, `sdesk-.template-1/unix:20 MIT-MAGIC-COOKIE-1 ${'ab'.repeat(16)}\n`);
      const rfb = createServer();
      if (socket) await new Promise<void>((r) => rfb.listen(old.socket, r));
      const group = await fakeDesktopGroup(join(old.dir, '..', 'bin-group'));
      try {
        writeFileSync(join(old.dir, 'launcher.pid'), `${group.pgid}\n`);
        process.kill(-group.pgid, 'SIGSTOP');
        await expect.poll(() => group.state('xfwm4'), { timeout: 5000 }).toBe('T');
        const done = handOverRestoredDesktop(execRun(env, { timeoutMs: 20_000 }), env, '.template-1', 'copy', 20);
        if (socket) expect(await done).toMatch(/^[0-9a-f]{16}$/);
        else await expect(done).rejects.toThrow(/no RFB socket/);
        expect([group.state('launcher'), group.state('xfwm4'), group.state('Xvnc')]).not.toContain('T');
      } finally {
        group.kill();
        rfb.close();
      }
    }
  });

  it('the hand-over with no folder to move: exit 3, said as the move', async () => {
    const { env, layout } = fakeX('sdesk-copy');
    rmSync(layout.dir, { recursive: true });
    await expect(handOverRestoredDesktop(execRun(env, { timeoutMs: 20_000 }), env, '.template-1', 'copy', 20)).rejects.toThrow(
      /the desktop's folder could not follow the sandbox's new name .*: the folder did not move/,
    );
  });
});
