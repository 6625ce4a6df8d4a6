/**
 * Chromium in the bot desktop quits on its own when the desktop stops — `desktop stop` and a sandbox
 * stop alike — so its profile says it exited normally and the next start offers no "Restore pages?".
 * Real parts: the desktop image, Xvnc + Xfce + Chromium in Docker.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

const DESKTOP_IMAGE = 'sandbox-desk/desktop:latest';

describe('Chromium shuts down cleanly with the desktop', () => {
  let t: TestDesk;
  let sb: string;
  const asRoot = async (cmd: string): Promise<string> =>
    (await t.desk.exec({ sandbox: sb, command: cmd, session: '__probe', user: 'root', mode: 'oneshot' })).stdout;
  const prefs = async (): Promise<string> =>
    asRoot('cat "$(getent passwd sdesk-display | cut -d: -f6)/.config/sandbox-desk/chromium/Default/Preferences" 2>/dev/null');
  const exitType = async (): Promise<unknown> => {
    const raw = await prefs();
    return raw ? (JSON.parse(raw) as { profile?: { exit_type?: unknown } }).profile?.exit_type : undefined;
  };
  /** The browser process is up and has its profile on disk (a Preferences file that is being used). */
  const waitForChromium = async (): Promise<void> => {
    for (let i = 0; i < 300; i++) {
      const up = await asRoot(
        'for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline 2>/dev/null | grep -q -- "--remote-debugging-pipe.*about:blank" && ! tr "\\0" " " < $p/cmdline | grep -qE "cdp-pipe|--type=" && echo up; done | head -1',
      );
      if (up.trim() === 'up' && (await prefs()) !== '') return;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error('Chromium did not come up in the desktop');
  };

  beforeAll(async () => {
    t = tempDesk();
    sb = uniqueName('clean');
    await t.desk.createSandbox({ name: sb, backend: 'docker', image: DESKTOP_IMAGE });
  }, 180_000);
  afterAll(async () => {
    await t.dispose();
  });

  it('start, desktop stop, start: the profile says exit_type Normal each time', async () => {
    await t.desk.desktop.start(sb);
    await waitForChromium();
    await t.desk.desktop.stop(sb);
    expect(await exitType()).toBe('Normal');
    await t.desk.desktop.start(sb);
    await waitForChromium();
    await t.desk.desktop.stop(sb);
    expect(await exitType()).toBe('Normal');
  }, 120_000);

  it('a sandbox stop with the desktop running stops Chromium cleanly first', async () => {
    await t.desk.desktop.start(sb);
    await waitForChromium();
    await t.desk.stopSandbox(sb);
    await t.desk.startSandbox(sb);
    expect(await exitType()).toBe('Normal');
    expect((await t.desk.desktop.status(sb)).running).toBe(false);
  }, 180_000);
});
