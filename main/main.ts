/**
 * Electron main process: one hardened window, the core in-process, one typed bridge.
 * The renderer is sandboxed with context isolation; it reaches the core only through the `invoke`
 * function the preload exposes, and every call is validated by the core's own contract.
 */
import { app, BrowserWindow, ipcMain, session, shell } from 'electron';
import { fileURLToPath } from 'node:url';
import { SandboxDesk } from '../src/api/sandbox-desk.js';
import { dispatch, INVOKE_CHANNEL } from './ipc-bridge.js';

const here = (p: string): string => fileURLToPath(new URL(p, import.meta.url));

let desk: SandboxDesk | null = null;

function createWindow(): BrowserWindow {
  const win = new BrowserWindow({
    width: 1280,
    height: 820,
    backgroundColor: '#15171c',
    title: 'Sandbox Desk',
    webPreferences: {
      preload: here('./preload.cjs'),
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      webSecurity: true,
    },
  });
  // Navigation away from the app and new windows are refused; links open in the user's browser.
  win.webContents.on('will-navigate', (e) => e.preventDefault());
  win.webContents.setWindowOpenHandler(({ url }) => {
    if (url.startsWith('https://')) void shell.openExternal(url);
    return { action: 'deny' };
  });
  void win.loadFile(here('../renderer/index.html'));
  return win;
}

void app.whenReady().then(() => {
  session.defaultSession.setPermissionRequestHandler((_wc, _permission, callback) => callback(false));
  desk = new SandboxDesk();
  ipcMain.handle(INVOKE_CHANNEL, (_e, method: unknown, params: unknown) => dispatch(desk!, method, params));
  createWindow();
});

app.on('window-all-closed', () => {
  void desk?.close().finally(() => app.quit());
});
