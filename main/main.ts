/**
 * Electron main process: one hardened window and the core in-process.
 * The renderer is sandboxed with context isolation and no Node; it reaches the core only through the
 * single `invoke` function the preload exposes (the same contract methods the browser mode serves),
 * and opens its streams (terminal, screen) on the loopback server with single-use tickets.
 */
import { app, BrowserWindow, clipboard, dialog, ipcMain, Menu, nativeTheme, Notification, session, shell } from 'electron';
import { fileURLToPath } from 'node:url';
import { CLIPBOARD_CHANNEL, EVENT_CHANNEL, EVENTS_BRIDGED_CHANNEL, INVOKE_CHANNEL, NOTIFY_CHANNEL } from '../src/shared/ipc-channel.js';
import { DEFAULT_CONFIG, loadConfig, type Config } from '../src/platform/config.js';
import { openLog, silentLogger, type AppLog } from '../src/platform/log.js';
import { resolvePaths } from '../src/platform/paths.js';
import { startCore, type CoreHost } from './core-host.js';
import { isScreenPopOut } from './screen-popout.js';
import { reportStartupFailure } from './startup-failure.js';
import { loadWindowState, saveWindowState } from './window-state.js';
import { menuTemplate, shortcutScript } from './app-menu.js';
import { claimSingleInstance } from './single-instance.js';
import { followSystemTheme, windowBackground } from './window-theme.js';

const here = (p: string): string => fileURLToPath(new URL(p, import.meta.url));

let core: CoreHost | null = null;
let mainWindow: BrowserWindow | null = null;

const HARDENED = {
  preload: here('./preload.cjs'),
  contextIsolation: true,
  sandbox: true,
  nodeIntegration: false,
  webSecurity: true,
  webviewTag: false,
};

function createWindow(dataDir: string): BrowserWindow {
  const state = loadWindowState(dataDir);
  const win = new BrowserWindow({
    ...state,
    backgroundColor: windowBackground(nativeTheme),
    title: 'Sandbox Desk',
    webPreferences: HARDENED,
  });
  if (state.maximized) win.maximize();
  // Navigation away from the app and new windows are refused; https links open in the user's browser.
  // The one window allowed: the screen popped out (the app's own page, ?screen=NAME), as hardened as this one.
  win.webContents.on('will-navigate', (e) => e.preventDefault());
  win.webContents.setWindowOpenHandler(({ url }) => {
    if (isScreenPopOut(url, win.webContents.getURL())) {
      return {
        action: 'allow',
        overrideBrowserWindowOptions: {
          width: 1300,
          height: 840,
          backgroundColor: windowBackground(nativeTheme),
          webPreferences: HARDENED,
        },
      };
    }
    if (url.startsWith('https://')) void shell.openExternal(url);
    return { action: 'deny' };
  });
  win.webContents.on('did-create-window', (child) => {
    child.webContents.on('will-navigate', (e) => e.preventDefault());
    child.webContents.setWindowOpenHandler(() => ({ action: 'deny' }));
  });
  win.on('close', () => saveWindowState(dataDir, { ...win.getNormalBounds(), maximized: win.isMaximized() }));
  void win.loadFile(here('../renderer/index.html'));
  return win;
}

/** The application menu; page actions (New sandbox) go to the focused window as its shortcut would. */
function installMenu(): void {
  const toPage = (script: string) => void (BrowserWindow.getFocusedWindow() ?? mainWindow)?.webContents.executeJavaScript(script);
  Menu.setApplicationMenu(
    Menu.buildFromTemplate(
      menuTemplate({
        dev: !app.isPackaged,
        newSandbox: () => toPage(shortcutScript('newSandbox')),
        openDocs: () => void shell.openPath(here('../../README.md')),
      }),
    ),
  );
}

const paths = resolvePaths();
let log: AppLog | null = null;

// A second launch focuses this window and quits (per data directory; see single-instance.ts).
const isInstance = claimSingleInstance(app, paths.dataDir, () => mainWindow);

// Every window's background follows the OS theme (the page follows it through prefers-color-scheme).
followSystemTheme(nativeTheme, (bg) => BrowserWindow.getAllWindows().forEach((w) => w.setBackgroundColor(bg)));

void app.whenReady().then(async () => {
  if (!isInstance) return;
  try {
    // A broken config must not hide behind a default: it is a startup failure with the file named.
    let config: Config = DEFAULT_CONFIG;
    let configError: unknown = null;
    // The log's own settings come from the config, so what loading says waits until the log is open.
    const notices: string[] = [];
    try {
      config = loadConfig(paths, (m) => notices.push(m)).config;
    } catch (err) {
      configError = err;
    }
    log = openLog({
      file: paths.logFile,
      level: config.log.level,
      maxBytes: config.log.maxBytes,
      files: config.log.files,
      component: 'electron-main',
    });
    for (const m of notices) log.logger.warn(m);
    if (configError) throw configError instanceof Error ? configError : new Error(`config not usable: ${JSON.stringify(configError)}`);
    session.defaultSession.setPermissionRequestHandler((_wc, _permission, callback) => callback(false));
    session.defaultSession.setPermissionCheckHandler(() => false);
    core = await startCore({ logger: log.logger, packaged: app.isPackaged });
    ipcMain.handle(INVOKE_CHANNEL, (_e, method: unknown, params: unknown) => core!.call(method, params));
    // Pushed state over the bridge, and the system notification the window asks for when a task ends.
    ipcMain.handle(EVENTS_BRIDGED_CHANNEL, () => core?.onEvent !== undefined);
    core.onEvent?.((event) => {
      for (const w of BrowserWindow.getAllWindows()) if (!w.isDestroyed()) w.webContents.send(EVENT_CHANNEL, event);
    });
    ipcMain.on(NOTIFY_CHANNEL, (_e, title: unknown, body: unknown) => {
      if (Notification.isSupported()) new Notification({ title: String(title), body: String(body) }).show();
    });
    // The window's clipboard (the screen's cut text): text only; anything else asked is refused.
    ipcMain.handle(CLIPBOARD_CHANNEL, (_e, op: unknown, text: unknown) => {
      if (op === 'read') return clipboard.readText();
      if (op === 'write' && typeof text === 'string') return clipboard.writeText(text);
      throw new Error('clipboard: read, or write with a string');
    });
    installMenu();
    mainWindow = createWindow(paths.dataDir);
    mainWindow.on('closed', () => (mainWindow = null));
    log.logger.info({ dataDir: paths.dataDir }, 'window opened');
  } catch (err) {
    reportStartupFailure(err, {
      dialog,
      log: log?.logger ?? silentLogger,
      logFile: log ? paths.logFile : null,
      exit: (code) => app.exit(code),
    });
  }
});

app.on('window-all-closed', () => {
  if (!isInstance) return;
  void (async () => {
    await core?.close();
    log?.dispose();
    app.quit();
  })();
});
