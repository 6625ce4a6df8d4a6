import { readFileSync } from 'node:fs';
import { posix } from 'node:path';
import { SandboxDeskError } from '../shared/errors.js';
import { killTree } from '../exec/kill-tree.js';
import { stopChromiumCleanly } from './chromium-shutdown.js';
import { runIn } from '../exec/run-in.js';
import { resourcePath } from '../platform/project-root.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';

/** The binaries a desktop needs inside the sandbox; `status` lists the ones the image lacks. */
export const DESKTOP_BINARIES = [
  'Xvnc',
  'xdpyinfo',
  'xauth',
  'dbus-run-session',
  'xfwm4',
  'xfdesktop',
  'xfce4-panel',
  'xfsettingsd',
  'chromium',
  'xdotool',
  'socat',
] as const;
// Defined in shared: the renderer offers it when a sandbox's image has no desktop.
export { DESKTOP_IMAGE } from '../shared/desktop-types.js';
/**
 * The account the desktop runs as where the image has it (the desktop and sshd images, the VM test
 * image): not the sandbox user, whose shell the agent drives.
 */
export const DISPLAY_USER = 'sdesk-display';

/**
 * How a desktop runs: `isolated` as DISPLAY_USER; `shared` as the sandbox user because isolation is not
 * possible here; `granted` as the sandbox user because the sandbox asked for it at start.
 */
export type DesktopMode = 'isolated' | 'shared' | 'granted';

/** The display a desktop in a sandbox gets (a desktop placed on the host gets one per sandbox). */
export const SANDBOX_DISPLAY = 20;

/** Where one desktop lives inside its sandbox; all of it in one 0700 directory of the desktop's user. */
export interface DesktopLayout {
  dir: string;
  display: number;
  /** Xvnc's RFB socket (0600). */
  socket: string;
  /** The browser's DevTools relay (0600), see resources/desktop/cdp-pipe.py. */
  cdpSocket: string;
  /** The X authority file holding the display's cookie (0600). */
  xauthority: string;
}

export function desktopLayout(env: SandboxEnvironment, sandbox: string, display: number): DesktopLayout {
  const dir = posix.join(env.getTempDir(), `sandbox-desk-desktop-${sandbox}`);
  return {
    dir,
    display,
    socket: posix.join(dir, 'rfb.sock'),
    cdpSocket: posix.join(dir, 'cdp.sock'),
    xauthority: posix.join(dir, 'Xauthority'),
  };
}

/** The environment words that let an app-owned process (xdotool, xdpyinfo) onto the display. */
export function displayEnv(layout: DesktopLayout): string[] {
  return [`DISPLAY=:${layout.display}`, `XAUTHORITY=${layout.xauthority}`];
}

export interface DesktopProbe {
  running: boolean;
  pid: number | null;
  geometry: string | null;
  missing: string[];
  /** false when Chromium runs without its inner sandbox (no user namespaces in the container). */
  chromiumSandbox: boolean | null;
  failed: string | null;
  /** The account the probe ran as (a backend that cannot switch users answers with its own). */
  whoami: string | null;
  /** Who owns the desktop's directory, when it exists: the account the desktop runs (or ran) as. */
  owner: string | null;
  /** How the running desktop was started (its launcher wrote it). */
  mode: DesktopMode | null;
}

const PROBE = `
dir=$1 disp=$2; shift 2
printf 'whoami %s\\n' "$(id -un)"
[ -e "$dir" ] && printf 'owner %s\\n' "$(stat -c %U "$dir")"
for b in "$@"; do command -v "$b" >/dev/null 2>&1 || printf 'missing %s\\n' "$b"; done
pid=$(cat "$dir/launcher.pid" 2>/dev/null)
if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ -S "$dir/rfb.sock" ] && [ -e "$dir/ready" ]; then
  printf 'running %s\\n' "$pid"
  printf 'mode %s\\n' "$(cat "$dir/mode" 2>/dev/null)"
  DISPLAY=:$disp XAUTHORITY=$dir/Xauthority xdpyinfo 2>/dev/null | sed -n 's/^ *dimensions: *\\([0-9]*x[0-9]*\\) .*/geometry \\1/p'
  printf 'chromium-sandbox %s\\n' "$(cat "$dir/chromium-sandbox" 2>/dev/null)"
fi
[ -e "$dir/failed" ] && printf 'failed %s\\n' "$(head -c 2000 "$dir/failed")"
exit 0
`;

/** One exec: which binaries are missing, and whether a desktop is up (adopt it rather than start another). */
export async function probeDesktop(
  env: SandboxEnvironment,
  layout: DesktopLayout,
  user?: string,
  /** Default 30 s; a VM under TCG on a loaded host needs more (desktop-service.ts). */
  timeoutMs?: number,
): Promise<DesktopProbe> {
  const r = await runIn(env, ['bash', '-c', PROBE, 'sandbox-desk', layout.dir, String(layout.display), ...DESKTOP_BINARIES], {
    user,
    ...(timeoutMs ? { timeoutMs } : {}),
  });
  // The probe itself always exits 0: a failure is the exec's (docker exec -i prints "unable to find user" on stdout).
  const said = r.stderr.trim() || r.stdout.toString('utf8').trim();
  if (r.code !== 0)
    throw new SandboxDeskError(
      'backend_unavailable',
      `could not probe the desktop${user ? ` as ${user}` : ''}: ${said || `exit ${r.code}`}`,
    );
  return parseProbe(r.stdout.toString('utf8'));
}

export function parseProbe(out: string): DesktopProbe {
  const probe: DesktopProbe = {
    running: false,
    pid: null,
    geometry: null,
    missing: [],
    chromiumSandbox: null,
    failed: null,
    whoami: null,
    owner: null,
    mode: null,
  };
  for (const line of out.split('\n')) {
    const [key, ...rest] = line.split(' ');
    const value = rest.join(' ');
    if (key === 'missing') probe.missing.push(value);
    else if (key === 'running') {
      probe.running = true;
      probe.pid = Number(value);
    } else if (key === 'geometry') probe.geometry = value;
    else if (key === 'chromium-sandbox') probe.chromiumSandbox = value === '1' ? true : value === '0' ? false : null;
    else if (key === 'failed') probe.failed = value;
    else if (key === 'whoami') probe.whoami = value || null;
    else if (key === 'owner') probe.owner = value || null;
    else if (key === 'mode') probe.mode = value === 'isolated' || value === 'shared' || value === 'granted' ? value : null;
  }
  return probe;
}

/*
 * The whole start in one exec: the launcher and the DevTools relay copied in from stdin (the first N bytes
 * are the launcher, the rest the relay: dd bs=1 reads exactly N, head -c may read past them from a pipe),
 * the launcher started detached, then its readiness file waited for. One exec, not three: each is a
 * process spawned on the app's event loop and the engine's work at full CPU weight (a pool's fill beside
 * a viewed desktop; a cold start's wait). Exit 3: the folder is another account's; 4: the copy failed;
 * 5: the launch failed; 2: the launcher said why it failed; 1: not ready in time.
 */
const START = `
dir=$1 script=$2 relay=$3 size=$4 disp=$5 geometry=$6 mode=$7 limit=$8
mask=$(umask)
umask 077
if [ -e "$dir" ] && [ ! -O "$dir" ]; then echo "$dir belongs to $(stat -c %U "$dir"), not to $(id -un)"; exit 3; fi
mkdir -p "$dir" && chmod 0700 "$dir" && dd bs=1 count="$size" of="$script" status=none && cat > "$relay" || exit 4
umask "$mask"
# A desktop killed behind the app's back (docker kill, a VM reset) leaves its readiness file: gone before
# the launch, or the wait below would take the dead desktop's word before the new launcher removes it.
rm -f "$dir/ready" "$dir/failed"
# setsid -f: the launcher leads its own process group, so stop can end all of it; its output goes to a
# file, not to this exec's pipes (which would keep the exec open).
(cd "$dir" && setsid -f bash "$script" "$dir" "$disp" "$geometry" "$mode" </dev/null >"$dir/launcher.log" 2>&1) || exit 5
for ((i = 0; i < limit * 50; i++)); do
  [ -e "$dir/ready" ] && exit 0
  [ -e "$dir/failed" ] && { cat "$dir/failed"; exit 2; }
  sleep 0.02
done
echo "the desktop did not become ready within $limit s"; tail -n 5 "$dir/xvnc.log" 2>/dev/null; exit 1
`;

/**
 * Copies the launcher into the sandbox and starts it detached, in a session of its own, then waits
 * (inside the sandbox, the same exec) for its readiness file.
 */
export async function startDesktopProcess(
  env: SandboxEnvironment,
  layout: DesktopLayout,
  opts: { geometry: string; mode: DesktopMode; user?: string; readyTimeoutS?: number },
): Promise<void> {
  const launcher = readFileSync(resourcePath('desktop', 'launcher.sh'));
  const relay = readFileSync(resourcePath('desktop', 'cdp-pipe.py'));
  const limit = opts.readyTimeoutS ?? 30;
  const r = await runIn(
    env,
    [
      'bash',
      '-c',
      START,
      'sandbox-desk',
      layout.dir,
      posix.join(layout.dir, 'launcher.sh'),
      posix.join(layout.dir, 'cdp-pipe.py'),
      String(launcher.length),
      String(layout.display),
      opts.geometry,
      opts.mode,
      String(limit),
    ],
    { user: opts.user, input: Buffer.concat([launcher, relay]), timeoutMs: (limit + 10) * 1000 },
  );
  const said = r.stdout.toString('utf8').trim();
  if (r.code === 0) return;
  if (r.code === 3) {
    throw new SandboxDeskError('backend_unavailable', `cannot start the desktop: ${said}`, {
      hint: 'a desktop of the other kind (isolated vs --grant-shell-display) did not stop cleanly: run `sandbox-desk desktop stop` first',
    });
  }
  if (r.code === 4)
    throw new SandboxDeskError('backend_unavailable', `could not copy the desktop launcher into the sandbox: ${r.stderr.trim()}`);
  if (r.code === 5) throw new SandboxDeskError('backend_unavailable', `could not start the desktop: ${r.stderr.trim()}`);
  throw new SandboxDeskError('backend_unavailable', `the desktop failed to start: ${said || r.stderr.trim() || `exit ${r.code}`}`, {
    hint: 'see the launcher logs in the sandbox: ' + layout.dir,
  });
}

const STOP = `
dir=$1
pid=$(cat "$dir/launcher.pid" 2>/dev/null)
if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
  # A desktop still frozen as a template saved it (freezeDesktop) would hold SIGTERM until continued.
  kill -CONT -- "-$pid" 2>/dev/null
  kill -TERM -- "-$pid" 2>/dev/null
  for ((i = 0; i < 100; i++)); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.02; done
  kill -KILL -- "-$pid" 2>/dev/null
fi
# All of it: the next desktop may run as another account (isolated vs granted) and must own the dir.
rm -rf -- "$dir"
exit 0
`;

/**
 * Ends the whole desktop: Chromium cleanly, then the launcher's process tree (while parents still link it together),
 * then anything left in its process group, then its directory.
 */
export async function stopDesktopProcess(env: SandboxEnvironment, layout: DesktopLayout, user?: string): Promise<void> {
  const pid = Number((await runIn(env, ['cat', posix.join(layout.dir, 'launcher.pid')], { user })).stdout.toString('utf8').trim());
  if (pid > 1) {
    // Chromium first, on its own, while its display is still there (see chromium-shutdown.ts).
    await stopChromiumCleanly(env, pid, layout.dir, user);
    await killTree(env, user, pid, { includeRoot: true });
  }
  const r = await runIn(env, ['bash', '-c', STOP, 'sandbox-desk', layout.dir], { user });
  if (r.code !== 0) throw new SandboxDeskError('backend_unavailable', `could not stop the desktop: ${r.stderr.trim()}`);
}

/** The Xfce pieces the launcher keeps running (launcher.sh's keep_running). */
export const XFCE_PIECES = ['xfsettingsd', 'xfwm4', 'xfdesktop', 'xfce4-panel'] as const;

/*
 * Is the desktop really up: its launcher alive, its readiness file and RFB socket there, and every
 * Xfce piece running as the desktop's account (the readiness file alone is written before Xfce starts:
 * a template saved then would hold a desktop without a window manager). Waits up to $limit seconds
 * for the pieces; says what is missing (and the end of xfce.log, where keep_running says restarts).
 */
const PIECES = `
dir=$1 limit=$2; shift 2
missing=
for ((i = 0; i < limit * 5; i++)); do
  pid=$(cat "$dir/launcher.pid" 2>/dev/null)
  missing=
  { [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; } || missing="$missing launcher"
  [ -e "$dir/ready" ] || missing="$missing ready-file"
  [ -S "$dir/rfb.sock" ] || missing="$missing rfb-socket"
  for p in "$@"; do pgrep -x -u "$(id -u)" "$p" >/dev/null || missing="$missing $p"; done
  [ -z "$missing" ] && exit 0
  [ -e "$dir/failed" ] && { echo "failed: $(head -c 500 "$dir/failed")"; exit 2; }
  sleep 0.2
done
echo "not running after $limit s:$missing"
tail -n 5 "$dir/xfce.log" 2>/dev/null
exit 1
`;

/** Null when the desktop and all its Xfce pieces run; else what is not (after waiting up to `limitS`). */
export async function desktopPiecesProblem(
  env: SandboxEnvironment,
  layout: DesktopLayout,
  opts: { user?: string; limitS: number },
): Promise<string | null> {
  const r = await runIn(env, ['bash', '-c', PIECES, 'sandbox-desk', layout.dir, String(opts.limitS), ...XFCE_PIECES], {
    user: opts.user,
    timeoutMs: (opts.limitS + 60) * 1000,
  });
  if (r.code === 0) return null;
  const said = r.stdout
    .toString('utf8')
    .trim()
    .replace(/\s*\n\s*/g, ' | ');
  return said || r.stderr.trim() || `the check exited ${r.code}`;
}

/*
 * A desktop template's last step before its memory is saved: every process of the desktop (the
 * launcher's process group: the launcher, the Xfce pieces, D-Bus, Chromium, the DevTools relay) but
 * Xvnc is stopped (SIGSTOP). Restored under TCG, the copy must translate again all the code each
 * running process touches: measured, Chromium, xfce4-panel, xfwm4 and the panel's plugins kept both
 * vCPUs of a copy busy for its first ten seconds, through its SSH connection, its identity and the
 * desktop's hand-over, and the hand-over itself took 11-14 s. Frozen, they wait; Xvnc alone serves
 * the screen (its framebuffer holds what they drew). The hand-over lets them go (handOverRestoredDesktop:
 * SIGCONT to the group, whatever happened), and a stop does too (STOP).
 */
const FREEZE = `
dir=$1 limit=$2
read -r pg <"$dir/launcher.pid" || exit 1
# Settled first: the checks pass while Xfce is still starting (panel plugins, Chromium's GPU process, the
# first paint); frozen then, a copy showed a black screen for 17 s after its thaw. Waited for: the guest
# at least 70 % idle for 3 s in a row (at most $limit s), as /proc/stat counts it.
read -r _ u n s i _ </proc/stat
quiet=0
for ((t = 0; t < limit && quiet < 3; t++)); do
  sleep 1
  read -r _ u2 n2 s2 i2 _ </proc/stat
  busy=$((u2 + n2 + s2 - u - n - s)) idle=$((i2 - i))
  if ((idle * 100 >= (busy + idle) * 70)); then quiet=$((quiet + 1)); else quiet=0; fi
  u=$u2 n=$n2 s=$s2 i=$i2
done
((quiet >= 3)) && echo "settled after $t s" || echo "not settled after $t s"
xvnc=$(pgrep -x -g "$pg" Xvnc) || { echo "no Xvnc in the desktop's process group $pg"; exit 1; }
kill -STOP -- "-$pg" && kill -CONT $xvnc
`;

/**
 * Freezes a template's checked desktop, all but Xvnc, once the guest settled (see FREEZE), right before the
 * template's memory is saved; says how long it waited (`settled after N s` or `not settled after N s`).
 */
export async function freezeDesktop(env: SandboxEnvironment, layout: DesktopLayout, user?: string, settleLimitS = 120): Promise<string> {
  const r = await runIn(env, ['bash', '-c', FREEZE, 'sandbox-desk', layout.dir, String(settleLimitS)], {
    user,
    timeoutMs: (settleLimitS + 60) * 1000,
  });
  const [settled = '', ...said] = r.stdout.toString('utf8').trim().split('\n');
  if (r.code !== 0)
    throw new SandboxDeskError(
      'backend_unavailable',
      `could not freeze the template's desktop: ${said.join(' ').trim() || r.stderr.trim() || `exit ${r.code}`}`,
    );
  return settled;
}

/*
 * A desktop restored from a VM template's memory holds the template's X cookie, the same in every copy.
 * A copy's own: a new trusted authorization made by the X server itself (the SECURITY extension's
 * GenerateAuthorization: random per call, from the kernel's generator, which the copy's identity step
 * reseeded with the host's random bytes — fork-identity.ts; xauth's `data` is not used by the server
 * for MIT-MAGIC-COOKIE-1), written over the display's entry in the Xauthority file that every
 * app-owned X client reads. Prints the new cookie's hash, never the cookie.
 */
export const REKEY_SCRIPT = `
dir=$1 disp=$2
umask 077
# Parsed by bash, not awk or cut, and no mktemp (the folder is 0700, this account's): under TCG each
# program started costs a tenth of a second or more, and this is on a desktop VM's create path.
new=$dir/Xauthority.new.$$
: >"$new" || exit 4
# The template's cookie, filed under the build VM's host name: Xlib looks entries up by the host name
# it has now (a copy's own), so it is filed again under that one first, to reach the display at all.
old=
while read -r entry _ c; do
  if [[ $entry == "unix:$disp" || $entry == */"unix:$disp" ]]; then old=$c; break; fi
done <<<"$(xauth -f "$dir/Xauthority" list)"
[ -n "$old" ] || { rm -f "$new"; echo "no cookie for :$disp in $dir/Xauthority"; exit 4; }
export XAUTHORITY="$new" DISPLAY=":$disp"
xauth -q add ":$disp" MIT-MAGIC-COOKIE-1 "$old" || { rm -f "$new"; exit 4; }
xauth -q generate ":$disp" MIT-MAGIC-COOKIE-1 trusted timeout 0 >/dev/null 2>&1 || { rm -f "$new"; echo "xauth generate failed"; exit 5; }
read -r _ _ cookie _ <<<"$(xauth list ":$disp")"
[ -n "$cookie" ] && [ "$cookie" != "$old" ] || { rm -f "$new"; echo "the cookie did not change"; exit 5; }
xdpyinfo >/dev/null 2>&1 || { rm -f "$new"; echo "the new cookie is not accepted"; exit 6; }
mv -f "$new" "$dir/Xauthority"
hash=$(printf '%s' "$cookie" | sha256sum)
printf '%s\\n' "\${hash:0:16}"
`;

/** REKEY_SCRIPT's failure (exit 4-6), as the hand-over reports it (src/pool/desktop-handover.ts). */
export function rekeyFailed(code: number | null, said: string): SandboxDeskError {
  return new SandboxDeskError('backend_unavailable', `could not give the restored desktop its own X cookie (exit ${code}): ${said}`);
}
