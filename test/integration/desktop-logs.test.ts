/**
 * The desktop's own logs inside a real Docker sandbox: once a desktop runs, the launcher, Xvnc, Xfce and
 * Chromium logs exist (read as the desktop's account, whose 0700 directory holds them) and can be read
 * and followed; after a desktop stop they are gone again and reading one says so.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DESKTOP_IMAGE } from '../../src/shared/desktop-types.js';
import { rejectsWith } from '../expect-error.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

describe('desktop logs (docker)', () => {
  let t: TestDesk;
  const sb = uniqueName('dlogs');

  beforeAll(async () => {
    t = tempDesk();
    await t.desk.createSandbox({ name: sb, backend: 'docker', image: DESKTOP_IMAGE });
    await t.desk.desktop.start(sb, { geometry: '1024x768' });
  }, 300_000);
  afterAll(async () => {
    await t?.dispose();
  }, 120_000);

  it('lists the desktop logs as there once the desktop runs, and reads Xvnc and the launcher', async () => {
    const sources = await t.desk.logs.sources(sb);
    const desktop = Object.fromEntries(sources.filter((s) => s.kind === 'desktop').map((s) => [s.id, s.exists]));
    expect(desktop).toMatchObject({ desktop: true, 'desktop-xvnc': true, 'desktop-xfce': true });
    expect((await t.desk.logs.read(sb, 'desktop-xvnc', 200)).text).toMatch(/Xvnc|TigerVNC|vncext/i);
    expect(typeof (await t.desk.logs.read(sb, 'desktop', 50)).text).toBe('string');
  }, 120_000);

  it('follows a desktop log, then the stop removes them and reading one says it does not exist', async () => {
    let got = '';
    const sub = await t.desk.logs.follow(sb, 'desktop-xvnc', 5, { onData: (x) => (got += x), onEnd: () => undefined });
    while (!got) await new Promise((r) => setTimeout(r, 50));
    // The tail inside the sandbox ends with the follow (its stdin's EOF), leaving no process behind.
    const tails = async () =>
      (
        await t.desk.exec({
          sandbox: sb,
          user: 'root',
          mode: 'oneshot',
          command: "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c '^tail -n 5 -F' || true",
        })
      ).stdout.trim();
    expect(await tails()).toBe('1');
    sub.dispose();
    while ((await tails()) !== '0') await new Promise((r) => setTimeout(r, 200));
    await t.desk.desktop.stop(sb);
    const e = await rejectsWith(t.desk.logs.read(sb, 'desktop-xvnc', 5), 'not_found');
    expect(e.message).toMatch(/does not exist: .*not there/);
  }, 120_000);
});
