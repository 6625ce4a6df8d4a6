import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { folderSandbox } from './test/folder-sandbox.js';
import { fakeXServer } from './test/fake-x.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import {
  desktopLayout,
  desktopPiecesProblem,
  freezeDesktop,
  REKEY_SCRIPT,
  rekeyFailed,
  XFCE_PIECES,
  type DesktopLayout,
} from './desktop-runtime.js';
import { runIn } from '../exec/run-in.js';
import { fakeDesktopGroup } from './test/frozen-group.js';

/**
 * The two in-guest scripts of a desktop template (src/sandbox/qemu/vm-template-desktop.ts), run on this
 * machine in a folder: the Xfce-pieces check (real processes named as the pieces, real pgrep) and the
 * X cookie's re-key (xauth and xdpyinfo faked: an X server whose accepted cookies are a file), and the
 * freeze before the template's memory is saved (a real process group).
 */
const dirs: string[] = [];
const procs: ChildProcess[] = [];
afterEach(() => {
  for (const p of procs.splice(0)) p.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A "sandbox" that is a folder of this machine; `bin` first on its PATH. */
function envOf(dir: string, bin?: string): SandboxEnvironment {
  return folderSandbox(dir, ['env', `PATH=${bin ? `${bin}:` : ''}${process.env.PATH ?? ''}`]);
}

function folder(): { dir: string; env: SandboxEnvironment } {
  const dir = mkdtempSync(join(tmpdir(), 'sdesk-rt-'));
  dirs.push(dir);
  return { dir, env: envOf(dir) };
}

describe("a desktop template's Xfce pieces check", { timeout: 30_000 }, () => {
  /** A desktop folder that reads as ready, and processes named as `pieces` (copies of sleep). */
  function desktop(pieces: readonly string[]) {
    const { dir, env } = folder();
    const layout = desktopLayout(env, 'tpl', 20);
    mkdirSync(layout.dir, { recursive: true });
    writeFileSync(join(layout.dir, 'launcher.pid'), String(process.pid));
    writeFileSync(join(layout.dir, 'ready'), '');
    writeFileSync(join(layout.dir, 'xfce.log'), 'sandbox-desk: xfwm4 exited (133); not restarted again after 5 restarts\n');
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    for (const p of pieces) {
      copyFileSync('/bin/sleep', join(bin, p));
      chmodSync(join(bin, p), 0o755);
      procs.push(spawn(join(bin, p), ['30'], { stdio: 'ignore' }));
    }
    return { env, layout };
  }

  it('all pieces, readiness and the RFB socket there: no problem', async () => {
    const { env, layout } = desktop(XFCE_PIECES);
    // The RFB socket: any Unix socket will do for the check.
    const { createServer } = await import('node:net');
    const server = createServer();
    await new Promise<void>((r) => server.listen(layout.socket, r));
    try {
      expect(await desktopPiecesProblem(env, layout, { limitS: 5 })).toBeNull();
    } finally {
      server.close();
    }
  });

  it('a piece missing: says which, and the end of xfce.log, after the wait', async () => {
    const { env, layout } = desktop(XFCE_PIECES.filter((p) => p !== 'xfwm4'));
    const problem = await desktopPiecesProblem(env, layout, { limitS: 1 });
    expect(problem).toMatch(/^not running after 1 s: rfb-socket xfwm4 \| sandbox-desk: xfwm4 exited \(133\)/);
  });
});

/** REKEY_SCRIPT alone, as the hand-over runs it (src/pool/desktop-handover.ts, with the folder's move): the new cookie's hash. */
async function rekeyDisplayCookie(env: SandboxEnvironment, layout: DesktopLayout): Promise<string> {
  const r = await runIn(env, ['bash', '-c', REKEY_SCRIPT, 'sandbox-desk', layout.dir, String(layout.display)], { timeoutMs: 20_000 });
  const said = r.stdout.toString('utf8').trim();
  if (r.code !== 0) throw rekeyFailed(r.code, said || r.stderr.trim());
  return said.split('\n')[0]!;
}

describe("a restored desktop's X cookie re-key", { timeout: 30_000 }, () => {
  const fakeX = (hostname: string) => fakeXServer(folder().dir, hostname);

  it("files the template's cookie under this host's name, replaces it with a new one the server made, and the file reaches the display", async () => {
    const { env, layout, server } = fakeX('sdesk-copy');
    const template = 'ab'.repeat(16);
    writeFileSync(server, `${template}\n`);
    writeFileSync(layout.xauthority, `sdesk-.template-1/unix:20 MIT-MAGIC-COOKIE-1 ${template}\n`);
    const hash = await rekeyDisplayCookie(env, layout);
    expect(hash).toMatch(/^[0-9a-f]{16}$/);
    const lines = readFileSync(layout.xauthority, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(1);
    const [entry, , cookie] = lines[0]!.split(' ');
    expect(entry).toBe('sdesk-copy/unix:20');
    expect(cookie).not.toBe(template);
    expect(readFileSync(server, 'utf8')).toContain(cookie);
    // A second copy of the same template gets another cookie.
    const second = fakeX('sdesk-other');
    writeFileSync(second.server, `${template}\n`);
    writeFileSync(second.layout.xauthority, `sdesk-.template-1/unix:20 MIT-MAGIC-COOKIE-1 ${template}\n`);
    expect(await rekeyDisplayCookie(second.env, second.layout)).not.toBe(hash);
  });

  it('no cookie for the display: fails saying so, the file left as it was', async () => {
    const { env, layout, server } = fakeX('sdesk-copy');
    writeFileSync(server, '');
    writeFileSync(layout.xauthority, '');
    await expect(rekeyDisplayCookie(env, layout)).rejects.toThrow(
      /could not give the restored desktop its own X cookie \(exit 4\): no cookie for :20/,
    );
  });

  it('the server refusing the generation: fails, the old file kept', async () => {
    const { env, layout, server } = fakeX('sdesk-copy');
    writeFileSync(server, 'not-the-cookie\n');
    const before = `sdesk-.template-1/unix:20 MIT-MAGIC-COOKIE-1 ${'cd'.repeat(16)}\n`;
    writeFileSync(layout.xauthority, before);
    await expect(rekeyDisplayCookie(env, layout)).rejects.toThrow(/exit 5.*xauth generate failed/);
    expect(readFileSync(layout.xauthority, 'utf8')).toBe(before);
  });
});

describe("a desktop template's freeze", { timeout: 30_000 }, () => {
  it("stops every process of the desktop's group but Xvnc", async () => {
    const { dir, env } = folder();
    const layout = desktopLayout(env, 'tpl', 20);
    mkdirSync(layout.dir, { recursive: true });
    const group = await fakeDesktopGroup(join(dir, 'bin'));
    try {
      writeFileSync(join(layout.dir, 'launcher.pid'), `${group.pgid}\n`);
      expect(await freezeDesktop(env, layout, undefined, 2)).toMatch(/^(not )?settled after \d s$/);
      // A stopped process shows T once it was scheduled to take the signal (a loaded host: a moment).
      await expect.poll(() => [group.state('launcher'), group.state('xfwm4')], { timeout: 5000 }).toEqual(['T', 'T']);
      expect(group.state('Xvnc')).not.toBe('T');
    } finally {
      group.kill();
    }
  });

  it('no Xvnc in the group: fails saying so', async () => {
    const { env } = folder();
    const layout = desktopLayout(env, 'tpl', 20);
    mkdirSync(layout.dir, { recursive: true });
    writeFileSync(join(layout.dir, 'launcher.pid'), `${process.pid}\n`);
    await expect(freezeDesktop(env, layout, undefined, 1)).rejects.toThrow(
      /could not freeze the template's desktop: no Xvnc in the desktop's process group/,
    );
  });
});
