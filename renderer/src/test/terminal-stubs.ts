import { beforeEach, vi } from 'vitest';

/**
 * Stand-ins for xterm.js and its addons (they need a real layout and canvas, which jsdom has not) and
 * for the WebSocket a terminal opens. A test file that renders terminals mocks the packages with these:
 *   vi.mock('@xterm/xterm', () => import('../test/terminal-stubs.js').then((m) => m.xtermModule));
 * (vi.mock must stay in the test file, where vitest hoists it; the factories are what is shared.)
 */
export const xtermModule = {
  Terminal: class {
    cols = 80;
    rows = 24;
    loadAddon() {}
    open() {}
    attachCustomKeyEventHandler() {}
    write() {}
    focus() {}
    dispose() {}
  },
};
export const fitAddonModule = {
  FitAddon: class {
    fit() {}
  },
};
export const attachAddonModule = { AttachAddon: class {} };

/** Every test gets a WebSocket that never connects: the stand-in terminal needs no server. */
export function stubWebSocketEachTest(): void {
  beforeEach(() => {
    vi.stubGlobal(
      'WebSocket',
      class extends EventTarget {
        binaryType = 'blob';
        close() {}
      },
    );
  });
}
