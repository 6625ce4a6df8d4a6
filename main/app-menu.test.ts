import { describe, expect, it, vi } from 'vitest';
import type { MenuItemConstructorOptions } from 'electron';
import { menuTemplate, shortcutScript, SHORTCUT_EVENT } from './app-menu.js';

const items = (m: MenuItemConstructorOptions): MenuItemConstructorOptions[] => (m.submenu ?? []) as MenuItemConstructorOptions[];

describe('application menu', () => {
  it('File has New sandbox and Close window; Help has the docs', () => {
    const newSandbox = vi.fn();
    const openDocs = vi.fn();
    const [file, , , help] = menuTemplate({ dev: false, newSandbox, openDocs });
    const fileItems = items(file!);
    expect(fileItems.map((i) => i.label).filter(Boolean)).toEqual(['New sandbox…', 'Close window']);
    (fileItems[0]!.click as () => void)();
    expect(newSandbox).toHaveBeenCalledOnce();
    (items(help!)[0]!.click as () => void)();
    expect(openDocs).toHaveBeenCalledOnce();
  });

  it('View offers reload and devtools only in development; zoom always', () => {
    const roles = (dev: boolean) => items(menuTemplate({ dev, newSandbox() {}, openDocs() {} })[2]!).map((i) => i.role);
    expect(roles(true)).toEqual(expect.arrayContaining(['reload', 'toggleDevTools', 'zoomIn', 'zoomOut', 'resetZoom']));
    expect(roles(false)).not.toContain('reload');
    expect(roles(false)).not.toContain('toggleDevTools');
    expect(roles(false)).toEqual(expect.arrayContaining(['zoomIn', 'zoomOut', 'resetZoom']));
  });

  it('a page action is dispatched as the shortcut event the keyboard also triggers', () => {
    const seen: unknown[] = [];
    const target = new EventTarget();
    target.addEventListener(SHORTCUT_EVENT, (e) => seen.push((e as CustomEvent).detail));
    // The script is what the main process runs in the page: evaluate it against a stand-in `window`.
    // eslint-disable-next-line @typescript-eslint/no-implied-eval
    (new Function('window', shortcutScript('newSandbox')) as (w: EventTarget) => void)(target);
    expect(seen).toEqual(['newSandbox']);
  });
});
