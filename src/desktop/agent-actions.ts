import { SandboxDeskError } from '../shared/errors.js';
import { runIn } from '../exec/run-in.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { displayEnv, type DesktopLayout } from './desktop-runtime.js';

/**
 * What an agent can do on its desktop. Input goes through xdotool inside the sandbox (one exec per
 * action, as the desktop's user): it types with the X keyboard map, so symbols arrive as typed, and it
 * needs no extra protocol in the core. Screenshots and resizes go through RFB (desktop-service).
 */
export type AgentAction =
  | { kind: 'move'; x: number; y: number }
  | { kind: 'click'; x: number; y: number; button?: 1 | 2 | 3; double?: boolean }
  | { kind: 'type'; text: string }
  | { kind: 'key'; keys: string }
  | { kind: 'scroll'; x: number; y: number; direction: 'up' | 'down' | 'left' | 'right'; amount?: number };

const SCROLL_BUTTON = { up: 4, down: 5, left: 6, right: 7 } as const;

function coord(n: number, name: string): string {
  if (!Number.isInteger(n) || n < 0 || n > 16384)
    throw new SandboxDeskError('invalid_input', `${name} must be an integer pixel coordinate, got ${n}`);
  return String(n);
}

/** The xdotool argv for an action; validated, never a shell string. */
export function xdotoolArgs(action: AgentAction): string[] {
  switch (action.kind) {
    case 'move':
      return ['mousemove', coord(action.x, 'x'), coord(action.y, 'y')];
    case 'click':
      return [
        'mousemove',
        coord(action.x, 'x'),
        coord(action.y, 'y'),
        'click',
        ...(action.double ? ['--repeat', '2'] : []),
        String(action.button ?? 1),
      ];
    case 'type':
      if (action.text.length > 10_000) throw new SandboxDeskError('invalid_input', 'text to type is longer than 10000 characters');
      return ['type', '--delay', '8', '--', action.text];
    case 'key':
      // Key names and combinations only (ctrl+l, Return, shift+Tab …): no free text reaches xdotool here.
      if (!/^[A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*( [A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*)*$/.test(action.keys)) {
        throw new SandboxDeskError('invalid_input', `keys ${JSON.stringify(action.keys)} are not key names such as "ctrl+l" or "Return"`);
      }
      return ['key', '--', ...action.keys.split(' ')];
    case 'scroll': {
      const amount = action.amount ?? 3;
      if (!Number.isInteger(amount) || amount < 1 || amount > 100)
        throw new SandboxDeskError('invalid_input', 'scroll amount must be 1–100');
      return [
        'mousemove',
        coord(action.x, 'x'),
        coord(action.y, 'y'),
        'click',
        '--repeat',
        String(amount),
        String(SCROLL_BUTTON[action.direction]),
      ];
    }
  }
}

/** `user` is the desktop's account: only it holds the display's X cookie (see desktop-runtime). */
export async function runXdotool(env: SandboxEnvironment, layout: DesktopLayout, action: AgentAction, user?: string): Promise<void> {
  const r = await runIn(env, ['env', ...displayEnv(layout), 'xdotool', ...xdotoolArgs(action)], { user, timeoutMs: 30_000 });
  if (r.code !== 0)
    throw new SandboxDeskError('backend_unavailable', `xdotool ${action.kind} failed: ${r.stderr.trim() || `exit ${r.code}`}`);
}

/**
 * Where the X pointer is, read inside the sandbox. `xdotool getmouselocation` also looks up the client
 * window under the pointer (XQueryTree, then WM_STATE with XGetProperty); a window that closes between
 * those two requests (a tooltip, a menu, Xfce mapping its panel) fails the whole read with BadWindow
 * although the pointer was read fine. That race is the desktop's, not an error: read again.
 */
export async function pointerLocation(env: SandboxEnvironment, layout: DesktopLayout, user?: string): Promise<{ x: number; y: number }> {
  for (let attempt = 1; ; attempt++) {
    const r = await runIn(env, ['env', ...displayEnv(layout), 'xdotool', 'getmouselocation', '--shell'], { user });
    const x = /X=(\d+)/.exec(r.stdout.toString())?.[1];
    const y = /Y=(\d+)/.exec(r.stdout.toString())?.[1];
    if (r.code === 0 && x !== undefined && y !== undefined) return { x: Number(x), y: Number(y) };
    if (attempt < POINTER_READ_ATTEMPTS && WINDOW_RACE.test(r.stderr)) {
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
      continue;
    }
    throw new SandboxDeskError('backend_unavailable', `xdotool getmouselocation failed: ${r.stderr.trim() || `exit ${r.code}`}`);
  }
}
const POINTER_READ_ATTEMPTS = 5;
/** X errors that mean "a window went away while it was being looked at". */
const WINDOW_RACE = /\bBad(Window|Drawable)\b/;

/**
 * Checks every name with X's own keysym database (XStringToKeysym, python3 + libX11, no display
 * needed) before anything is pressed, then presses the combinations with one `xdotool key`. Where
 * python3 is missing, xdotool's own "No such key name" (it skips such a key and exits 0) is the check.
 */
const KEYS_SCRIPT = `
if command -v python3 >/dev/null 2>&1; then
  bad=$(python3 -c "$1" "\${@:2}") || { echo "unknown:$bad" >&2; exit 3; }
fi
out=$(xdotool key -- "\${@:2}" 2>&1); code=$?
case "$out" in *"No such key name"*) echo "unknown:$(printf '%s' "$out" | sed -n "s/.*No such key name '\\([^']*\\)'.*/\\1/p" | sort -u | tr '\\n' ' ')" >&2; exit 3;; esac
[ -n "$out" ] && echo "$out" >&2
exit $code
`;
const PY_CHECK = `
import ctypes, sys
try:
    x = ctypes.CDLL('libX11.so.6')
except OSError:
    sys.exit(0)  # no libX11 here: xdotool's own check below
x.XStringToKeysym.restype = ctypes.c_ulong; x.XStringToKeysym.argtypes = [ctypes.c_char_p]
bad = sorted({n for c in sys.argv[1:] for n in c.split('+') if not n.startswith('0x') and not x.XStringToKeysym(n.encode())})
print(' '.join(bad)); sys.exit(1 if bad else 0)
`;
const KEY_COMBO = /^(0x[0-9a-f]{1,8}|[A-Za-z][A-Za-z0-9_]{0,63})(\+(0x[0-9a-f]{1,8}|[A-Za-z][A-Za-z0-9_]{0,63}))*$/;

/** The words (after the exec prefix) that press `combos` ("0xffe3+XF86AudioMute") with xdotool; argv, never a shell string. */
export function xdotoolKeysWords(display: string[], combos: string[]): string[] {
  for (const c of combos)
    if (!KEY_COMBO.test(c)) throw new SandboxDeskError('invalid_input', `${JSON.stringify(c)} is not a key combination`);
  return ['env', ...display, 'bash', '-c', KEYS_SCRIPT, 'sandbox-desk', PY_CHECK, ...combos];
}

/** Runs xdotoolKeysWords; names X does not know are refused (nothing pressed when python3 is there). */
export async function runXdotoolKeys(
  env: SandboxEnvironment,
  layout: DesktopLayout,
  combos: string[],
  user?: string,
  keys = combos.join(' '),
): Promise<void> {
  const r = await runIn(env, xdotoolKeysWords(displayEnv(layout), combos), { user, timeoutMs: 30_000 });
  const unknown = /unknown:(.*)/.exec(r.stderr)?.[1]?.trim();
  if (r.code === 3 && unknown !== undefined)
    throw new SandboxDeskError(
      'invalid_input',
      `${unknown
        .split(/\s+/)
        .map((n) => JSON.stringify(n))
        .join(', ')} in keys ${JSON.stringify(keys)}: not a key name X knows`,
      {
        hint: 'use X key names (xev or /usr/include/X11/keysymdef.h, XF86keysym.h): "ctrl+l", "Return", "XF86AudioMute"',
      },
    );
  if (r.code !== 0) throw new SandboxDeskError('backend_unavailable', `xdotool key failed: ${r.stderr.trim() || `exit ${r.code}`}`);
}
