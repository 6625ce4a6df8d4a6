import { SandboxDeskError } from '../shared/errors.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { runIn } from './run-in.js';
import { ENTER_FUNCTION } from './wrapper-script.js';

/**
 * File operations inside a sandbox, anchored where the session's shell is: every script first enters
 * the session's cwd exactly as a command would (as the sandbox user, walking up if it is gone), then
 * resolves the path — relative paths against that directory. Paths travel as arguments, never spliced
 * into the script; content travels on stdin/stdout, so binary data is safe.
 *   bash -c SCRIPT sandbox-desk <session cwd> <tmpdir> <path> [<max bytes>]
 * Exit codes: 3 not found, 4 not a regular file / directory, 5 too large, 6 permission denied.
 */
const PRELUDE = `${ENTER_FUNCTION}
__sd_enter "$1" "$2"
p=$3
case $p in /*) abs=$p ;; .) abs=$PWD ;; *) abs=$PWD/\${p#./} ;; esac
printf '%s\\n' "$abs" >&2
# A path that does not show: missing (3), or hidden behind a directory the user cannot search (6).
__sd_absent() {
  local d=$abs
  while [[ $d == */?* ]]; do
    d=\${d%/*}; [[ -z $d ]] && d=/
    if [[ -d $d ]]; then [[ -x $d ]] || exit 6; exit 3; fi
  done
  exit 3
}
`;

const READ = `${PRELUDE}
[ -e "$p" ] || __sd_absent
[ -f "$p" ] || exit 4
[ -r "$p" ] || exit 6
size=$(stat -c %s -- "$p") || exit 6
[ "$size" -le "$4" ] || { printf 'size %s\\n' "$size" >&2; exit 5; }
exec cat -- "$p"
`;

const WRITE = `${PRELUDE}
[ -d "$p" ] && exit 4
d=\${p%/*}; [ "$d" = "$p" ] && d=.; [ -z "$d" ] && d=/
[ -d "$d" ] || __sd_absent
[ -w "$d" ] || { [ -e "$p" ] && [ -w "$p" ]; } || exit 6
exec cat > "$p"
`;

const LIST = `${PRELUDE}
[ -e "$p" ] || __sd_absent
[ -d "$p" ] || exit 4
cd -- "$p" 2>/dev/null || exit 6
find . -mindepth 1 -maxdepth 1 -printf '%y\\t%s\\t%P\\0' 2>/dev/null | head -c 4000000
`;

export interface FileTarget {
  env: SandboxEnvironment;
  user?: string | undefined;
  /** The session's cwd, as planned by the cwd policy. */
  cwd: string;
}

function fail(code: number | null, path: string, stderr: string): never {
  const what: Record<number, [string, string]> = {
    3: ['not_found', 'does not exist'],
    4: ['invalid_input', 'is not the kind of file asked for'],
    5: ['invalid_input', 'is larger than the limit'],
    6: ['refused', 'is not accessible to the sandbox user'],
  };
  const [errCode, msg] = what[code ?? -1] ?? ['backend_unavailable', `could not be read (exit ${code}: ${stderr.trim()})`];
  throw new SandboxDeskError(errCode as 'not_found', `${path} ${msg}${code === 5 ? ` (${/size (\d+)/.exec(stderr)?.[1]} bytes)` : ''}`);
}

/** The absolute path the script resolved (first stderr line). */
function resolvedPath(stderr: string, asked: string): string {
  return stderr.split('\n')[0] || asked;
}

export async function readSandboxFile(t: FileTarget, path: string, maxBytes: number): Promise<{ path: string; bytes: Buffer }> {
  const r = await runIn(t.env, ['bash', '-c', READ, 'sandbox-desk', t.cwd, t.env.getTempDir(), path, String(maxBytes)], { user: t.user });
  const abs = resolvedPath(r.stderr, path);
  if (r.code !== 0) fail(r.code, abs, r.stderr);
  return { path: abs, bytes: r.stdout };
}

export async function writeSandboxFile(t: FileTarget, path: string, content: Buffer): Promise<{ path: string; bytes: number }> {
  const r = await runIn(t.env, ['bash', '-c', WRITE, 'sandbox-desk', t.cwd, t.env.getTempDir(), path], { user: t.user, input: content });
  const abs = resolvedPath(r.stderr, path);
  if (r.code !== 0) fail(r.code, abs, r.stderr);
  return { path: abs, bytes: content.length };
}

export interface DirEntry {
  name: string;
  type: 'file' | 'dir' | 'link' | 'other';
  size: number;
}

export async function listSandboxDir(t: FileTarget, path: string): Promise<{ path: string; entries: DirEntry[] }> {
  const r = await runIn(t.env, ['bash', '-c', LIST, 'sandbox-desk', t.cwd, t.env.getTempDir(), path], { user: t.user });
  const abs = resolvedPath(r.stderr, path);
  if (r.code !== 0) fail(r.code, abs, r.stderr);
  const kinds: Record<string, DirEntry['type']> = { f: 'file', d: 'dir', l: 'link' };
  const entries = r.stdout
    .toString('utf8')
    .split('\0')
    .filter(Boolean)
    .map((line) => {
      const [type, size, ...name] = line.split('\t');
      return { name: name.join('\t'), type: kinds[type!] ?? 'other', size: Number(size) };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
  return { path: abs, entries };
}
