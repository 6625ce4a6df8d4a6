/**
 * `npm start`: always opens the app. With the Electron binary present it runs the window; where the
 * binary is missing (setup could not download it — GitHub unreachable, CI) it says so in ONE line and
 * starts the browser mode (`sandbox-desk serve`), opening the printed URL with `xdg-open` where that
 * exists (and carrying on without it where it does not).
 *
 * Plain Node, no `electron` import: `require('electron')` would try to download the binary (electron ≥ 40
 * does so from index.js), so the binary is found from the package's own `path.txt`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');

/**
 * The Electron executable, or null when it is not installed. `SANDBOX_DESK_ELECTRON_BINARY` overrides the
 * lookup (tests use it to fake a missing binary; a user can point at a system Electron).
 */
export function findElectronBinary(env: NodeJS.ProcessEnv = process.env, root = ROOT): string | null {
  const override = env.SANDBOX_DESK_ELECTRON_BINARY;
  if (override !== undefined) return existsSync(override) ? override : null;
  const pkg = join(root, 'node_modules', 'electron');
  const pathFile = join(pkg, 'path.txt');
  if (!existsSync(pathFile)) return null;
  const exe = join(pkg, 'dist', readFileSync(pathFile, 'utf8').trim());
  return existsSync(exe) ? exe : null;
}

/** An executable named `name` on PATH, or null (no `which`: it is not everywhere either). */
export function findOnPath(name: string, env: NodeJS.ProcessEnv = process.env): string | null {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here; next directory
    }
  }
  return null;
}

/** The one line `npm start` prints when it falls back. */
export function fallbackLine(reason: 'missing' | 'no-display'): string {
  return reason === 'missing'
    ? 'sandbox-desk: the Electron binary is not installed (node_modules/electron/dist) — starting the browser mode instead'
    : 'sandbox-desk: no display for the Electron window (DISPLAY/WAYLAND_DISPLAY unset) — starting the browser mode instead';
}

/** Opens `url` in the default browser, detached; absent or failing xdg-open is not an error. */
function openInBrowser(url: string, env: NodeJS.ProcessEnv): void {
  const opener = findOnPath('xdg-open', env);
  if (!opener) {
    process.stderr.write('(xdg-open not found: open the URL above in a browser)\n');
    return;
  }
  const child = spawn(opener, [url], { stdio: 'ignore', detached: true, env });
  child.on('error', () => undefined);
  child.unref();
}

/** Browser mode: `sandbox-desk serve --json …`, its URL printed and opened; lives until the server does. */
function startBrowserMode(extraArgs: string[], env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'sandbox-desk.js'), 'serve', '--json', ...extraArgs], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env,
  });
  const lines = createInterface({ input: child.stdout });
  let opened = false;
  lines.on('line', (line) => {
    if (opened) return void process.stdout.write(line + '\n');
    try {
      const { url } = JSON.parse(line) as { url: string };
      opened = true;
      process.stdout.write(`Sandbox Desk is serving on 127.0.0.1 only. Open:\n  ${url}\n(Ctrl-C to stop)\n`);
      openInBrowser(url, env);
    } catch {
      process.stdout.write(line + '\n');
    }
  });
  return child;
}

function forwardSignals(child: ChildProcess): void {
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => child.kill(sig));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 0 : 1)));
}

/** Entry: `node dist/main/start-app.js [serve args…]` (the args go to `serve` in browser mode). */
export function startApp(argv: string[], env: NodeJS.ProcessEnv = process.env): ChildProcess {
  const electron = findElectronBinary(env);
  const noDisplay = process.platform === 'linux' && !env.DISPLAY && !env.WAYLAND_DISPLAY;
  if (electron && !noDisplay) {
    const child = spawn(electron, [ROOT], { stdio: 'inherit', env });
    forwardSignals(child);
    return child;
  }
  process.stderr.write(fallbackLine(electron ? 'no-display' : 'missing') + '\n');
  const child = startBrowserMode(argv, env);
  forwardSignals(child);
  return child;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) startApp(process.argv.slice(2));
