/**
 * The application menu (File, Edit, View, Help). A pure template builder — the main process passes in
 * what the items do — so the shape is unit-tested without Electron. Menu actions that belong to the page
 * (New sandbox) are delivered as the same shortcut action the keyboard would trigger
 * (MENU_SHORTCUT_EVENT, src/shared/ipc-channel.ts; renderer/src/shortcuts.ts listens), so the preload stays one function.
 */
import type { MenuItemConstructorOptions } from 'electron';
import { MENU_SHORTCUT_EVENT } from '../src/shared/ipc-channel.js';

export interface MenuActions {
  /** Not packaged: reload and devtools are offered. */
  dev: boolean;
  newSandbox(): void;
  openDocs(): void;
}

export const SHORTCUT_EVENT = MENU_SHORTCUT_EVENT;

/** The script the main process runs in the page for a menu item that is a page action. */
export function shortcutScript(action: 'newSandbox' | 'newTerminal' | 'toggleView'): string {
  return `window.dispatchEvent(new CustomEvent(${JSON.stringify(SHORTCUT_EVENT)}, { detail: ${JSON.stringify(action)} }))`;
}

export function menuTemplate(a: MenuActions): MenuItemConstructorOptions[] {
  return [
    {
      label: '&File',
      submenu: [
        { label: 'New sandbox…', accelerator: 'CmdOrCtrl+Shift+N', click: () => a.newSandbox() },
        { type: 'separator' },
        { label: 'Close window', role: 'close' },
      ],
    },
    { label: '&Edit', role: 'editMenu' },
    {
      label: '&View',
      submenu: [
        ...(a.dev
          ? ([
              { role: 'reload' },
              { role: 'forceReload' },
              { role: 'toggleDevTools' },
              { type: 'separator' },
            ] as MenuItemConstructorOptions[])
          : []),
        { role: 'resetZoom' },
        { role: 'zoomIn' },
        { role: 'zoomOut' },
        { type: 'separator' },
        { role: 'togglefullscreen' },
      ],
    },
    { label: '&Help', submenu: [{ label: 'Documentation', click: () => a.openDocs() }] },
  ];
}
