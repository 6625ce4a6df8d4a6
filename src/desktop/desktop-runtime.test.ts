import { describe, expect, it } from 'vitest';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { desktopLayout, displayEnv, parseProbe } from './desktop-runtime.js';

const env = { getTempDir: () => '/tmp' } as unknown as SandboxEnvironment;

describe('desktop runtime', () => {
  it('keeps all of a desktop in one directory: RFB socket, DevTools relay socket, X authority', () => {
    const l = desktopLayout(env, 'sb1', 20);
    expect(l).toEqual({
      dir: '/tmp/sandbox-desk-desktop-sb1',
      display: 20,
      socket: '/tmp/sandbox-desk-desktop-sb1/rfb.sock',
      cdpSocket: '/tmp/sandbox-desk-desktop-sb1/cdp.sock',
      xauthority: '/tmp/sandbox-desk-desktop-sb1/Xauthority',
    });
    // The display needs the cookie: DISPLAY alone is not enough, so app-owned X clients carry both.
    expect(displayEnv(l)).toEqual(['DISPLAY=:20', 'XAUTHORITY=/tmp/sandbox-desk-desktop-sb1/Xauthority']);
  });

  it('parses a probe: who it ran as, who owns the directory, how the desktop was started', () => {
    const p = parseProbe(
      'whoami sdesk-display\nowner sdesk-display\nmissing chromium\nrunning 42\nmode isolated\ngeometry 1024x768\nchromium-sandbox 0\n',
    );
    expect(p).toEqual({
      running: true,
      pid: 42,
      geometry: '1024x768',
      missing: ['chromium'],
      chromiumSandbox: false,
      failed: null,
      whoami: 'sdesk-display',
      owner: 'sdesk-display',
      mode: 'isolated',
    });
  });

  it('an unknown mode (an older launcher) reads as null, not as isolated', () => {
    expect(parseProbe('whoami agent\nrunning 7\nmode \n').mode).toBeNull();
    expect(parseProbe('whoami agent\nrunning 7\nmode whatever\n').mode).toBeNull();
    expect(parseProbe('whoami agent\n')).toMatchObject({ running: false, owner: null, mode: null });
  });
});
