import { runIn } from '../exec/run-in.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { SandboxDeskError } from '../shared/errors.js';
import { displayEnv, type DesktopLayout } from './desktop-runtime.js';

/**
 * The desktop's CLIPBOARD selection, read and set with xclip inside the sandbox as the desktop's user
 * (the way agents and the CLI reach it; the window's clipboard goes through RFB cut text instead, which
 * TigerVNC's Xvnc ties to the same selection). Text only, capped both ways.
 */

/** xclip -i forks a child that owns the selection until someone else takes it: its output must not be our pipes. */
const WRITE = `command -v xclip >/dev/null 2>&1 || exit 127
f=$(mktemp) || exit 1
xclip -selection clipboard -i >/dev/null 2>"$f"; c=$?
cat -- "$f" >&2; rm -f -- "$f"; exit "$c"
`;

/** Reads at most $1 + 1 bytes, so "over the cap" is known without reading all of a huge selection. */
const READ = `command -v xclip >/dev/null 2>&1 || exit 127
out=$(xclip -selection clipboard -o 2>&1 >/dev/null </dev/null | head -c 2000) || true
xclip -selection clipboard -o 2>/dev/null </dev/null | head -c "$(($1 + 1))"
# No owner, or an owner without text: xclip says so on stderr; an empty clipboard, not an error.
case $out in *"not available"*|*"no owner"*|"") exit 0 ;; *) printf '%s\\n' "$out" >&2; exit 3 ;; esac
`;

function noXclip(): SandboxDeskError {
  return new SandboxDeskError('unsupported', 'xclip is not installed in this sandbox, so its clipboard cannot be reached from here', {
    hint: 'install xclip in the image (sandbox-desk/desktop has it), or copy and paste through the screen',
  });
}

export function tooLarge(bytes: number | string, maxBytes: number, where: string): SandboxDeskError {
  return new SandboxDeskError('invalid_input', `the clipboard text ${where} is ${bytes} bytes, over the limit of ${maxBytes}`, {
    hint: 'copy less text at once, or raise `clipboard.maxBytes` (sandbox-desk config set clipboard.maxBytes N)',
  });
}

export async function readClipboard(
  env: SandboxEnvironment,
  layout: DesktopLayout,
  user: string | undefined,
  maxBytes: number,
): Promise<string> {
  const r = await runIn(env, ['env', ...displayEnv(layout), 'bash', '-c', READ, 'sandbox-desk', String(maxBytes)], {
    user,
    timeoutMs: 30_000,
  });
  if (r.code === 127) throw noXclip();
  if (r.code !== 0)
    throw new SandboxDeskError('backend_unavailable', `reading the clipboard failed: ${r.stderr.trim() || `exit ${r.code}`}`);
  if (r.stdout.length > maxBytes) throw tooLarge(`more than ${maxBytes}`, maxBytes, 'in the sandbox');
  return r.stdout.toString('utf8');
}

export async function writeClipboard(
  env: SandboxEnvironment,
  layout: DesktopLayout,
  user: string | undefined,
  text: string,
  maxBytes: number,
): Promise<number> {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) throw tooLarge(bytes, maxBytes, 'given');
  const r = await runIn(env, ['env', ...displayEnv(layout), 'bash', '-c', WRITE, 'sandbox-desk'], { user, input: text, timeoutMs: 30_000 });
  if (r.code === 127) throw noXclip();
  if (r.code !== 0)
    throw new SandboxDeskError('backend_unavailable', `setting the clipboard failed: ${r.stderr.trim() || `exit ${r.code}`}`);
  return bytes;
}
