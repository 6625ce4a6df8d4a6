import { runIn } from '../exec/run-in.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';

/**
 * Chromium is asked to quit on its own — and waited for — before the rest of the desktop goes. Ended
 * together with Xvnc and its DevTools relay (or killed after a short grace), it loses its display and
 * its pipe mid-shutdown, leaves `exit_type: Crashed` in its profile, and greets the next start with
 * "Restore pages? Chromium didn't shut down correctly".
 *
 *   bash -c CHROMIUM_STOP sandbox-desk <launcher pid> <grace seconds> <desktop dir>
 * First `Browser.close` over the desktop's own DevTools socket (cdp-pipe.py): Chromium closes its
 * windows as if the user had quit, and its profile says `Normal`. Only when that is not possible, or
 * it is still there after the grace, SIGTERM (Chromium saves its profile then too, as `SessionEnded`,
 * which does not offer a restore either). The browser process is the one in the launcher's process
 * group (setsid made the launcher its leader) with `--remote-debugging-pipe` and no `--type=`
 * (renderers, zygote and GPU have one), and not the relay that started it. Exits 0 once it is gone
 * (or there was none), 2 when it was still there after the SIGTERM's grace too (the tree kill that
 * follows ends it).
 */
export const CHROMIUM_STOP = `
root=$1 grace=$2 dir=$3
browsers() {
  local d line rest pgrp cmd
  for d in /proc/[0-9]*; do
    IFS= read -r line < "$d/stat" 2>/dev/null || continue
    rest=\${line##*) }
    read -r _ _ pgrp _ <<< "$rest"
    [ "$pgrp" = "$root" ] || continue
    cmd=$(tr '\\0' ' ' < "$d/cmdline" 2>/dev/null) || continue
    case "$cmd" in *cdp-pipe.py*|*--type=*) continue ;; *--remote-debugging-pipe*) echo "\${d#/proc/}" ;; esac
  done
}
gone_within() {
  local i p alive
  for ((i = 0; i < $1 * 20; i++)); do
    alive=
    for p in $pids; do [ -e "/proc/$p" ] && alive=1; done
    [ -z "$alive" ] && return 0
    sleep 0.05
  done
  return 1
}
pids=$(browsers)
[ -n "$pids" ] || exit 0
if [ -S "$dir/cdp.sock" ] && command -v python3 >/dev/null; then
  python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(float(sys.argv[2]))
s.connect(sys.argv[1])
s.sendall(b"{\\"id\\":1,\\"method\\":\\"Browser.close\\"}\\0")
try:
    while s.recv(65536):
        pass
except OSError:
    pass
' "$dir/cdp.sock" "$grace" 2>/dev/null
  gone_within "$grace" && exit 0
fi
kill -TERM $pids 2>/dev/null
gone_within "$grace" && exit 0
exit 2
`;

/** Seconds Chromium gets to save its profile and quit before the desktop is torn down anyway. */
export const CHROMIUM_GRACE_S = 10;

/** Asks the desktop's Chromium to quit and waits for it (`graceS` per attempt); true when it quit in time. */
export async function stopChromiumCleanly(
  env: SandboxEnvironment,
  launcherPid: number,
  dir: string,
  user: string | undefined,
  graceS = CHROMIUM_GRACE_S,
): Promise<boolean> {
  if (!Number.isInteger(launcherPid) || launcherPid <= 1) return true;
  const r = await runIn(env, ['bash', '-c', CHROMIUM_STOP, 'sandbox-desk', String(launcherPid), String(graceS), dir], {
    user,
    timeoutMs: (3 * graceS + 15) * 1000,
  });
  return r.code === 0;
}
