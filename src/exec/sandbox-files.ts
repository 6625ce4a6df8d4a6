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
/** Shared with file-transfer.ts: enter the session's cwd, resolve $3 into `abs`, print it to stderr. */
export const PRELUDE = `${ENTER_FUNCTION}
__sd_enter "$1" "$2"
p=$3
case $p in /*) abs=$p ;; .) abs=$PWD ;; *) abs=$PWD/\${p#./} ;; esac
# NUL-terminated: a directory name may hold a line break; no path holds a NUL.
printf '%s\\0' "$abs" >&2
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

/** One chunk of a file: $4 bytes at most from offset $5; the file's size goes to stderr first. */
const READ_RANGE = `${PRELUDE}
[ -e "$p" ] || exit 3
[ -f "$p" ] || exit 4
[ -r "$p" ] || exit 6
size=$(stat -c %s -- "$p") || exit 6
printf 'size %s\\n' "$size" >&2
[ "$5" -le "$size" ] || exit 7
tail -c +$(($5 + 1)) -- "$p" | head -c "$4"
`;

/**
 * Appends to a file of exactly $4 bytes (the next chunk of a chunked write). A chunk that does not fit
 * (the disk filled) is cut off again: the file is back to its $4 bytes, so the same chunk can be sent
 * again once there is space. (A whole file is written by file-transfer.ts, under a temporary name.)
 */
const APPEND = `${PRELUDE}
[ -d "$p" ] && exit 4
d=\${p%/*}; [ "$d" = "$p" ] && d=.; [ -z "$d" ] && d=/
[ -d "$d" ] || __sd_absent
[ -f "$p" ] || exit 3
[ -w "$p" ] || exit 6
size=$(stat -c %s -- "$p") || exit 6
[ "$size" -eq "$4" ] || { printf 'size %s\\n' "$size" >&2; exit 7; }
err=$(cat 2>&1 >> "$p") || { truncate -s "$4" -- "$p"; printf '%s\\n' "$err" >&2; exit 9; }
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
  const said = afterPath(stderr).trim();
  const [errCode, msg] = what[code ?? -1] ?? ['backend_unavailable', `could not be used (exit ${code}: ${said})`];
  throw new SandboxDeskError(errCode as 'not_found', `${path} ${msg}${code === 5 ? ` (${/size (\d+)/.exec(stderr)?.[1]} bytes)` : ''}`);
}

/** The absolute path the script resolved (stderr's first record, NUL-terminated), or the asked one when it never said. */
export function resolvedPath(stderr: string, asked: string): string {
  const end = stderr.indexOf('\0');
  return end > 0 ? stderr.slice(0, end) : asked;
}

/** What the script said on stderr after the path's record. */
export function afterPath(stderr: string): string {
  const end = stderr.indexOf('\0');
  return end >= 0 ? stderr.slice(end + 1) : stderr;
}

export async function readSandboxFile(t: FileTarget, path: string, maxBytes: number): Promise<{ path: string; bytes: Buffer }> {
  const r = await runIn(t.env, ['bash', '-c', READ, 'sandbox-desk', t.cwd, t.env.getTempDir(), path, String(maxBytes)], { user: t.user });
  const abs = resolvedPath(r.stderr, path);
  if (r.code !== 0) fail(r.code, abs, r.stderr);
  return { path: abs, bytes: r.stdout };
}

const sizeIn = (stderr: string): number | null => {
  const m = /^size (\d+)$/m.exec(afterPath(stderr));
  return m ? Number(m[1]) : null;
};

/** Reads at most `length` bytes from `offset` (chunked reads of large files); says the file's size. */
export async function readSandboxFileRange(
  t: FileTarget,
  path: string,
  offset: number,
  length: number,
): Promise<{ path: string; bytes: Buffer; size: number }> {
  const r = await runIn(
    t.env,
    ['bash', '-c', READ_RANGE, 'sandbox-desk', t.cwd, t.env.getTempDir(), path, String(length), String(offset)],
    { user: t.user },
  );
  const abs = resolvedPath(r.stderr, path);
  const size = sizeIn(r.stderr);
  if (r.code === 7) throw new SandboxDeskError('invalid_input', `offset ${offset} is past the end of ${abs} (${size} bytes)`);
  if (r.code !== 0 || size === null) fail(r.code, abs, r.stderr);
  return { path: abs, bytes: r.stdout, size };
}

/** Appends `content` to a file that has exactly `offset` bytes (chunks in order); see file-transfer.ts for whole files. */
export async function appendSandboxFile(
  t: FileTarget,
  path: string,
  content: Buffer,
  offset: number,
): Promise<{ path: string; bytes: number }> {
  const r = await runIn(t.env, ['bash', '-c', APPEND, 'sandbox-desk', t.cwd, t.env.getTempDir(), path, String(offset)], {
    user: t.user,
    input: content,
  });
  const abs = resolvedPath(r.stderr, path);
  if (r.code === 7)
    throw new SandboxDeskError(
      'invalid_input',
      `offset ${offset} is not the size of ${abs} (${sizeIn(r.stderr)} bytes): write chunks in order, the first at offset 0`,
    );
  if (r.code === 3) throw new SandboxDeskError('not_found', `${abs} does not exist: write the first chunk at offset 0`);
  if (r.code === 9 && /No space left|quota exceeded/i.test(r.stderr))
    throw new SandboxDeskError('no_space', `the sandbox ran out of space while appending to ${abs}; it is back to its ${offset} bytes`, {
      hint: `free space in the sandbox, then send this chunk again at offset ${offset}`,
    });
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
