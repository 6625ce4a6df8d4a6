import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { claimSingleInstance, type FocusableWindow, type InstanceApp } from './single-instance.js';

function fakeApp(locked: boolean) {
  const listeners: Array<() => void> = [];
  const quit = vi.fn();
  const app: InstanceApp & { paths: Record<string, string> } = {
    paths: {},
    setPath: (n, p) => void (app.paths[n] = p),
    requestSingleInstanceLock: () => locked,
    on: (_e, l) => listeners.push(l),
    quit,
  };
  return { app, quit, secondLaunch: () => listeners.forEach((l) => l()) };
}

function fakeWindow(minimized: boolean): FocusableWindow & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    isDestroyed: () => false,
    isMinimized: () => minimized,
    restore: () => calls.push('restore'),
    show: () => calls.push('show'),
    focus: () => calls.push('focus'),
  };
}

describe('single instance', () => {
  it('the lock is per data directory', () => {
    const { app } = fakeApp(true);
    claimSingleInstance(app, '/data/x', () => null);
    expect(app.paths.userData).toBe(join('/data/x', 'electron'));
  });

  it('a second launch restores and focuses the window of the first', () => {
    const { app, quit, secondLaunch } = fakeApp(true);
    const win = fakeWindow(true);
    expect(claimSingleInstance(app, '/d', () => win)).toBe(true);
    secondLaunch();
    expect(win.calls).toEqual(['restore', 'show', 'focus']);
    expect(quit).not.toHaveBeenCalled();
  });

  it('the second process quits when another holds the lock', () => {
    const { app, quit } = fakeApp(false);
    expect(claimSingleInstance(app, '/d', () => null)).toBe(false);
    expect(quit).toHaveBeenCalledOnce();
  });

  it('a second launch before the window exists does nothing', () => {
    const { app, secondLaunch } = fakeApp(true);
    claimSingleInstance(app, '/d', () => null);
    expect(() => secondLaunch()).not.toThrow();
  });
});
