/**
 * Control that hands the screen back as it found it (issue 36, item 2): the real lease store (SQLite in
 * a temporary data dir); the desktop — its size and its resize — is faked, as the boundary.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SandboxDeskError } from '../shared/errors.js';
import type { ScreenSize } from '../store/lease-store.js';
import { Store } from '../store/store.js';
import { ControlHandover, type HandoverLimits } from './control-handover.js';

/** A desktop whose size a viewer can change (its "Resize to pane"); resizes the handover asks for are logged. */
class FakeDesktop {
  size: ScreenSize | null = { width: 1280, height: 800 };
  readonly resizes: ScreenSize[] = [];
  readonly warnings: string[] = [];
  /** While set, reading the size waits for it (a slow or hung exec into the sandbox). */
  reading: Promise<void> | null = null;
  failResize: Error | null = null;
}

let dir: string;
let store: Store;
let desktop: FakeDesktop;

function handover(limits: HandoverLimits = { readMs: 2000, restoreWaitMs: 2000 }): ControlHandover {
  return new ControlHandover(
    {
      leases: store.leases,
      screenSize: async () => {
        await desktop.reading;
        if (!desktop.size) throw new SandboxDeskError('desktop_not_running', 'the desktop of sandbox s is not running');
        return { ...desktop.size };
      },
      resize: async (_sandbox, size) => {
        if (desktop.failResize) throw desktop.failResize;
        if (!desktop.size) throw new SandboxDeskError('desktop_not_running', 'the desktop of sandbox s is not running');
        desktop.resizes.push(size);
        desktop.size = { ...size };
      },
      warn: (_sandbox, message) => desktop.warnings.push(message),
    },
    limits,
  );
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sdesk-handover-'));
  store = Store.open(dir);
  store.sandboxes.insert({
    name: 's',
    backend: 'docker',
    image: null,
    user: null,
    declaredDefaultCwd: null,
    backendRef: null,
    mounts: [],
    env: {},
    options: {},
    createdAt: 'now',
    home: null,
    homeIncarnation: null,
    lastObservedCwd: null,
    lastObservedAt: null,
  });
  desktop = new FakeDesktop();
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('taking control and giving it back', () => {
  it('give back puts the screen back to the size the agent had when the person took control', async () => {
    const h = handover();
    expect(await h.take('s', 'v1')).toMatchObject({ holder: 'human', viewerId: 'v1' });
    desktop.size = { width: 696, height: 758 }; // the person's "Resize to pane"
    expect(await h.giveBack('s', 'v1')).toMatchObject({ holder: 'agent', viewerId: null });
    expect(desktop.resizes).toEqual([{ width: 1280, height: 800 }]);
    expect(desktop.size).toEqual({ width: 1280, height: 800 });
    // The memory ended with the lease: a later take remembers afresh.
    expect(store.leases.agentScreen('s')).toBeNull();
    expect(desktop.warnings).toEqual([]);
  });

  it('the same when the holder leaves in another process: the size is kept with the lease, not in memory', async () => {
    await handover().take('s', 'v1');
    desktop.size = { width: 696, height: 758 };
    // Another core on the same data dir (the app restarted): its own store and handover.
    const other = Store.open(dir);
    try {
      expect(other.leases.agentScreen('s')).toEqual({ width: 1280, height: 800 });
      const { lease, restore } = other.leases.handBack('s', 'v1');
      expect(lease.holder).toBe('agent');
      expect(restore).toEqual({ width: 1280, height: 800 });
    } finally {
      other.close();
    }
  });

  it('a second person taking over keeps what the first one found, not the size the first one gave it', async () => {
    const h = handover();
    await h.take('s', 'v1');
    desktop.size = { width: 696, height: 758 };
    await h.take('s', 'v2');
    desktop.size = { width: 1000, height: 700 };
    // The first holder's stream closing gives back nothing it no longer holds.
    expect(await h.giveBack('s', 'v1')).toMatchObject({ holder: 'human', viewerId: 'v2' });
    expect(desktop.resizes).toEqual([]);
    await h.giveBack('s', 'v2');
    expect(desktop.resizes).toEqual([{ width: 1280, height: 800 }]);
  });

  it('re-taking by the holder does not read the size again (the screen is the person’s by then)', async () => {
    const h = handover();
    await h.take('s', 'v1');
    desktop.size = { width: 696, height: 758 };
    await h.take('s', 'v1');
    await h.giveBack('s', 'v1');
    expect(desktop.resizes).toEqual([{ width: 1280, height: 800 }]);
  });

  it('a desktop that is not running has nothing to remember or put back, and nothing is said', async () => {
    const h = handover();
    desktop.size = null;
    await h.take('s', 'v1');
    expect(store.leases.agentScreen('s')).toBeNull();
    expect(await h.giveBack('s', 'v1')).toMatchObject({ holder: 'agent' });
    // Remembered while running, stopped before the give-back: the lease is back, silently.
    desktop.size = { width: 1280, height: 800 };
    await h.take('s', 'v1');
    expect(store.leases.agentScreen('s')).toEqual({ width: 1280, height: 800 });
    desktop.size = null;
    expect(await h.giveBack('s', 'v1')).toMatchObject({ holder: 'agent' });
    expect(desktop.resizes).toEqual([]);
    expect(desktop.warnings).toEqual([]);
  });

  it('a size the agent could not have asked for (read from inside the sandbox, which may lie) is not remembered, and said', async () => {
    const h = handover();
    desktop.size = { width: 16384, height: 16384 };
    await h.take('s', 'v1');
    desktop.size = { width: 696, height: 758 };
    await h.giveBack('s', 'v1');
    expect(desktop.resizes).toEqual([]);
    expect(desktop.warnings).toEqual([
      expect.stringMatching(/reported a screen size of 16384x16384, outside 100–9999 a side: not remembered/),
    ]);
  });

  it('a size that cannot be read in time does not hold the person back: control is taken without it, and that is said', async () => {
    const h = handover({ readMs: 50, restoreWaitMs: 2000 });
    desktop.reading = new Promise(() => undefined); // never answers
    const started = Date.now();
    expect(await h.take('s', 'v1')).toMatchObject({ holder: 'human', viewerId: 'v1' });
    expect(Date.now() - started).toBeLessThan(1500);
    expect(desktop.warnings).toEqual([expect.stringMatching(/could not be read within 50 ms, so it is not remembered/)]);
    desktop.reading = null;
    await h.giveBack('s', 'v1');
    expect(desktop.resizes).toEqual([]);
  });

  it('a resize back that fails still gives control back, and says what the agent can do', async () => {
    const h = handover();
    await h.take('s', 'v1');
    desktop.failResize = new Error('RFB server refused the resize to 1280x800: invalid screen layout (status 3)');
    expect(await h.giveBack('s', 'v1')).toMatchObject({ holder: 'agent' });
    expect(desktop.warnings).toEqual([
      expect.stringMatching(/could not put the screen back to 1280x800 \(RFB server refused .*\); the agent can resize it/),
    ]);
  });
});
