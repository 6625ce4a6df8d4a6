import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface WindowState {
  x?: number;
  y?: number;
  width: number;
  height: number;
  maximized: boolean;
}

const DEFAULT: WindowState = { width: 1360, height: 860, maximized: false };

/** The window's last bounds, kept in the data directory so the app reopens where it was. */
export function loadWindowState(dataDir: string): WindowState {
  try {
    const s = JSON.parse(readFileSync(join(dataDir, 'window-state.json'), 'utf8')) as Partial<WindowState>;
    const ok = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n);
    if (!ok(s.width) || !ok(s.height) || s.width < 400 || s.height < 300) return DEFAULT;
    return { width: s.width, height: s.height, maximized: s.maximized === true, ...(ok(s.x) && ok(s.y) ? { x: s.x, y: s.y } : {}) };
  } catch {
    return DEFAULT;
  }
}

export function saveWindowState(dataDir: string, state: WindowState): void {
  try {
    writeFileSync(join(dataDir, 'window-state.json'), JSON.stringify(state));
  } catch {
    // Not being able to remember the window is not worth an error dialog.
  }
}
