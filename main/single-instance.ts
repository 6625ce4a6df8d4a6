/**
 * One window per data directory: a second launch hands over to the first (which focuses its window)
 * and quits. The lock lives in Electron's userData, which is pointed into the data directory first, so
 * two different SANDBOX_DESK_HOMEs (tests, a second profile) are two instances, not one.
 */
import { join } from 'node:path';

/** The part of Electron's `app` this needs (a fake in the unit test). */
export interface InstanceApp {
  setPath(name: 'userData', path: string): void;
  requestSingleInstanceLock(): boolean;
  on(event: 'second-instance', listener: () => void): unknown;
  quit(): void;
}

export interface FocusableWindow {
  isDestroyed(): boolean;
  isMinimized(): boolean;
  restore(): void;
  show(): void;
  focus(): void;
}

/** True when this process is the instance; false when another one has it (this one is quitting). */
export function claimSingleInstance(app: InstanceApp, dataDir: string, window: () => FocusableWindow | null): boolean {
  app.setPath('userData', join(dataDir, 'electron'));
  if (!app.requestSingleInstanceLock()) {
    app.quit();
    return false;
  }
  app.on('second-instance', () => {
    const win = window();
    if (!win || win.isDestroyed()) return;
    if (win.isMinimized()) win.restore();
    win.show();
    win.focus();
  });
  return true;
}
