import { describe, expect, it, vi } from 'vitest';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { parseProbe, type DesktopProbe } from './desktop-runtime.js';
import { startTemplateDesktop, type DesktopCheckDeps } from './template-desktop.js';

const env = { getTempDir: () => '/tmp' } as unknown as SandboxEnvironment;

// The parser's own defaults (nothing running), as the display user answers.
const probe = (over: Partial<DesktopProbe> = {}): DesktopProbe => ({ ...parseProbe('whoami sdesk-display'), ...over });

/** The desktop's start and checks faked: `pieces` answers in turn (null: all up). */
function deps(pieces: (string | null)[], over: Partial<Record<keyof DesktopCheckDeps, unknown>> = {}) {
  const answers = [...pieces];
  const base = {
    start: vi.fn<DesktopCheckDeps['start']>().mockResolvedValue(undefined),
    probe: vi.fn<DesktopCheckDeps['probe']>().mockResolvedValue(probe()),
    pieces: vi.fn<DesktopCheckDeps['pieces']>(() => Promise.resolve(answers.shift() ?? null)),
    freeze: vi.fn<DesktopCheckDeps['freeze']>().mockResolvedValue('settled after 3 s'),
    frame: vi.fn<DesktopCheckDeps['frame']>().mockResolvedValue({ width: 1280, height: 800 }),
  };
  return { ...base, ...over } as typeof base;
}

describe("a desktop template's desktop: started and checked at the build", () => {
  it('starts it as the display user, checks the Xfce pieces, reads a frame, checks the pieces again', async () => {
    const d = deps([null, null]);
    const said: string[] = [];
    const got = await startTemplateDesktop(env, '.template-ab', '1280x800', (m) => said.push(m), d);
    expect(got).toEqual({
      sandbox: '.template-ab',
      user: 'sdesk-display',
      mode: 'isolated',
      display: 20,
      geometry: '1280x800',
      frame: '1280x800',
    });
    expect(d.start).toHaveBeenCalledWith(
      env,
      expect.objectContaining({ dir: '/tmp/sandbox-desk-desktop-.template-ab', display: 20 }),
      expect.objectContaining({ geometry: '1280x800', mode: 'isolated', user: 'sdesk-display' }),
    );
    expect(d.frame).toHaveBeenCalledWith(env, '/tmp/sandbox-desk-desktop-.template-ab/rfb.sock', 'sdesk-display');
    // Pieces checked before the frame and after it.
    expect(d.pieces.mock.invocationCallOrder[0]!).toBeLessThan(d.frame.mock.invocationCallOrder[0]!);
    expect(d.pieces.mock.invocationCallOrder[1]!).toBeGreaterThan(d.frame.mock.invocationCallOrder[0]!);
    // Frozen last, as the desktop's account, once every check passed.
    expect(d.freeze).toHaveBeenCalledWith(env, expect.objectContaining({ dir: '/tmp/sandbox-desk-desktop-.template-ab' }), 'sdesk-display');
    expect(d.freeze.mock.invocationCallOrder[0]!).toBeGreaterThan(d.pieces.mock.invocationCallOrder[1]!);
    expect(said.at(-1)).toMatch(/the desktop is up: Xfce running, a 1280x800 frame/);
  });

  it('a guest without the display user: the sandbox user, shared', async () => {
    const d = deps([], { probe: vi.fn<DesktopCheckDeps['probe']>().mockResolvedValue(probe({ whoami: 'debian' })) });
    const got = await startTemplateDesktop(env, 'b', '1024x768', () => undefined, d);
    expect(got).toMatchObject({ user: null, mode: 'shared' });
    expect(d.start.mock.calls[0]![2]).toMatchObject({ mode: 'shared', user: undefined });
  });

  it('fails fast, saying which piece is not running, without waiting for a frame', async () => {
    const d = deps(['not running after 180 s: xfwm4 xfdesktop | sandbox-desk: xfwm4 exited (133); not restarted again']);
    await expect(startTemplateDesktop(env, 'c', '1280x800', () => undefined, d)).rejects.toThrow(
      /the template's desktop is not up: not running after 180 s: xfwm4 xfdesktop/,
    );
    expect(d.frame).not.toHaveBeenCalled();
  });

  it('a piece that died after the first frame fails the build too', async () => {
    const d = deps([null, 'not running after 5 s: xfsettingsd']);
    await expect(startTemplateDesktop(env, 'd', '1280x800', () => undefined, d)).rejects.toThrow(
      /not up: after the first frame: not running after 5 s: xfsettingsd/,
    );
  });

  it('no frame from the VNC server, or the start failing, fails the build saying so', async () => {
    const noFrame = deps([null], { frame: vi.fn<DesktopCheckDeps['frame']>().mockRejectedValue(new Error('RFB timeout')) });
    await expect(startTemplateDesktop(env, 'e', '1280x800', () => undefined, noFrame)).rejects.toThrow(
      /no frame from its VNC server: RFB timeout/,
    );
    const noStart = deps([], { start: vi.fn<DesktopCheckDeps['start']>().mockRejectedValue(new Error('Xvnc exited')) });
    await expect(startTemplateDesktop(env, 'f', '1280x800', () => undefined, noStart)).rejects.toThrow(/not up: Xvnc exited/);
    expect(noStart.pieces).not.toHaveBeenCalled();
  });

  it('a VM without the desktop parts is refused before any start', async () => {
    const d = deps([], { probe: vi.fn<DesktopCheckDeps['probe']>().mockResolvedValue(probe({ missing: ['Xvnc', 'chromium'] })) });
    await expect(startTemplateDesktop(env, 'g', '1280x800', () => undefined, d)).rejects.toThrow(/no desktop .*: Xvnc missing/);
    expect(d.start).not.toHaveBeenCalled();
  });
});
