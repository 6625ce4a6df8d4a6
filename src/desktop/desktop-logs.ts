import { spawn } from 'node:child_process';
import { posix } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { runIn } from '../exec/run-in.js';
import { remoteArgv } from '../exec/remote-argv.js';
import { SandboxDeskError } from '../shared/errors.js';
import type { IDisposable } from '../shared/lifecycle.js';
import type { LogFollower, LogSourceSpec } from '../sandbox/observability.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';

/** Where a desktop's logs are inside its sandbox, and the account that may read them (its 0700 dir). */
export interface DesktopLogLocation {
  env: SandboxEnvironment;
  dir: string;
  user: string | undefined;
}

/**
 * The desktop's own logs, inside the sandbox: the launcher's output (startDesktopProcess sends it to
 * `launcher.log`), and what the launcher sends Xvnc, Xfce and Chromium's output to
 * (resources/desktop/launcher.sh). They live in the desktop's directory, removed by a desktop stop.
 */
export const DESKTOP_LOGS = [
  { id: 'desktop', file: 'launcher.log', label: 'Desktop launcher' },
  { id: 'desktop-xvnc', file: 'xvnc.log', label: 'Xvnc' },
  { id: 'desktop-xfce', file: 'xfce.log', label: 'Xfce' },
  { id: 'desktop-chromium', file: 'chromium.log', label: 'Chromium' },
] as const;

const fileOf = (source: string): string => {
  const f = DESKTOP_LOGS.find((l) => l.id === source);
  if (!f) throw new SandboxDeskError('not_found', `no desktop log ${source}`);
  return f.file;
};

// One exec for all four: prints the names of those that can be read.
const PROBE = 'for f in "${@:2}"; do [ -r "$1/$f" ] && printf "%s\\n" "$f"; done; exit 0';

export async function desktopLogSources(at: DesktopLogLocation): Promise<LogSourceSpec[]> {
  const r = await runIn(at.env, ['bash', '-c', PROBE, 'sandbox-desk', at.dir, ...DESKTOP_LOGS.map((l) => l.file)], { user: at.user });
  const present = new Set(r.code === 0 ? r.stdout.toString('utf8').split('\n').filter(Boolean) : []);
  return DESKTOP_LOGS.map((l) => {
    const path = posix.join(at.dir, l.file);
    const exists = present.has(l.file);
    return {
      id: l.id,
      label: l.label,
      exists,
      detail: exists ? `${path} (in the sandbox)` : `${path} is not there (no desktop has run since the last stop)`,
    };
  });
}

export async function readDesktopLog(at: DesktopLogLocation, source: string, tail: number): Promise<string> {
  const path = posix.join(at.dir, fileOf(source));
  const r = await runIn(at.env, ['tail', '-n', String(tail), '--', path], { user: at.user });
  if (r.code !== 0) throw new SandboxDeskError('not_found', `cannot read ${path} in the sandbox: ${r.stderr.trim()}`);
  return r.stdout.toString('utf8');
}

/**
 * `tail -F` inside the sandbox. It stops when its stdin closes: ending the exec client alone would
 * leave the remote tail running on some transports (a `docker exec` without a TTY), so the remote side
 * watches its stdin and ends tail itself.
 */
const FOLLOW = 'tail -n "$1" -F -- "$2" 2>/dev/null & t=$!; cat >/dev/null; kill "$t" 2>/dev/null; exit 0';

export function followDesktopLog(at: DesktopLogLocation, source: string, tail: number, to: LogFollower): IDisposable {
  const path = posix.join(at.dir, fileOf(source));
  const argv = remoteArgv(at.env, { user: at.user, interactive: false }, ['bash', '-c', FOLLOW, 'sandbox-desk', String(tail), path]);
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'ignore'] });
  const decoder = new StringDecoder('utf8');
  let done = false;
  child.stdout.on('data', (c: Buffer) => {
    const text = decoder.write(c);
    if (text) to.onData(text);
  });
  child.stdin.on('error', () => undefined);
  child.on('error', (err) => {
    if (!done) to.onEnd(err);
    done = true;
  });
  child.on('close', () => {
    if (!done) to.onEnd();
    done = true;
  });
  return {
    dispose: () => {
      done = true;
      child.stdin.end();
      // The remote side ends on EOF; a transport that does not pass it on is ended here.
      setTimeout(() => child.kill('SIGTERM'), 2_000).unref();
    },
  };
}
