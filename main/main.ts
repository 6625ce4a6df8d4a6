/**
 * Electron main process: one hardened window and the core in-process.
 * The renderer is sandboxed with context isolation and no Node; it reaches the core only through the
 * single `invoke` function the preload exposes (the same contract methods the browser mode serves),
 * and opens its streams (terminal, screen) on the loopback server with single-use tickets.
 */
import { app, BrowserWindow, ipcMain, session, shell } from 'electron';
import { fileURLToPath } from 'node:url';
import { resolveDataDir } from '../src/platform/data-dir.js';
import { INVOKE_CHANNEL } from '../src/shared/ipc-channel.js';
import { startCore, type CoreHost } from './core-host.js';
import { loadWindowState, saveWindowState } from './window-state.js';

const here = (p: string): string => fileURLToPath(new URL(p, import.meta.url));

let core: CoreHost | null = null;

function createWindow(dataDir: string): BrowserWindow {
  const state = loadWindowState(dataDir);
  const win = new BrowserWindow({
    ...state,
    backgroundColor: '#15171c',
    title: 'Sandbox Desk',
    webPreferences: {
      preload: here('./preload.cjs'),
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      webSecurity: true,
      webviewTag: false,
    },
  });
  if (state.maximized) win.maximize();
  // Navigation away from the app and new windows are refused; https links open in the user's browser.
  win.webContents.on('will-navigate', (e) => e.preventDefault());
  win.webContents.setWindowOpenHandler(({ url }) => {
    if (url.startsWith('https://')) void shell.openExternal(url);
    return { action: 'deny' };
  });
  win.on('close', () => saveWindowState(dataDir, { ...win.getNormalBounds(), maximized: win.isMaximized() }));
  void win.loadFile(here('../renderer/index.html'));
  return win;
}

void app.whenReady().then(async () => {
  session.defaultSession.setPermissionRequestHandler((_wc, _permission, callback) => callback(false));
  session.defaultSession.setPermissionCheckHandler(() => false);
  core = await startCore();
  ipcMain.handle(INVOKE_CHANNEL, (_e, method: unknown, params: unknown) => core!.call(method, params));
  createWindow(resolveDataDir());
});

app.on('window-all-closed', () => {
  void (async () => {
    await core?.close();
    app.quit();
  })();
});
