import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { posix } from 'node:path';
import { pipeline, Transform, type Readable, type Writable } from 'node:stream';
import { SandboxDeskError } from '../shared/errors.js';
import { assertFileName } from '../shared/file-names.js';
import { printable } from '../shared/printable.js';
import { remoteArgv } from './remote-argv.js';
import { afterPath, appendSandboxFile, PRELUDE, resolvedPath, type FileTarget } from './sandbox-files.js';

/**
 * Streaming file transfers into and out of a sandbox, for files of any size: the bytes flow through
 * the exec prefix (so every backend that can run a command can take a file) and are never held whole
 * in memory. Same anchoring and user as sandbox-files.ts: the script enters the session's cwd as the
 * sandbox user, so what a shell could not enter, an upload cannot write either.
 *
 * An upload lands under a temporary name in the target folder and is renamed only once every byte it
 * announced has arrived: an upload cut short, or a disk that filled up, leaves nothing under the
 * final name. Free space is checked first (`df`) so a file that cannot fit is refused before a byte
 * is sent. Each script reports in a first stdout record (`ready …`, `size …`, ended by a NUL byte,
 * the one byte no path can hold: a newline in a folder name cannot end it early and pass the rest off
 * as the payload), so the caller knows the checks passed before it streams; failures are exit codes
 * (see `failure`).
 *
 * Whatever the sandbox sends is a claim, never an instruction: the paths in these records are shown
 * (escaped: `printable`), never used to choose anything on this machine (a download's name comes from
 * the path the caller asked for), and a download's bytes are counted against the size it announced
 * (`countedOutput`).
 *   bash -c SCRIPT sandbox-desk <session cwd> <tmpdir> <dir or path> [<name> <size> <mode>]
 */

/**
 * Checks a folder for a new entry named $4 of $5 bytes; $6 = check | write | replace | mkdir.
 * `replace` is write_file's: like `write`, but through a symbolic link (the file it names is replaced,
 * the link stays, as writing into it would), and it refuses a file the user may not write or one that
 * is not a regular file. A file replaced keeps its permission bits.
 */
const INTO_DIR = `${PRELUDE}
name=$4 size=$5 mode=$6
[ -e "$p" ] || __sd_absent
[ -d "$p" ] || exit 4
{ [ -x "$p" ] && [ -w "$p" ]; } || exit 6
if [ "$abs" = / ]; then final=/$name; else final=$abs/$name; fi
if [ "$mode" = mkdir ]; then
  [ -e "$final" ] && exit 11
  mkdir -- "$final" || exit 6
  printf 'done %s\\0' "$final"; exit 0
fi
[ -d "$final" ] && exit 12
dir=$abs
if [ "$mode" = replace ]; then
  if [ -L "$final" ]; then
    final=$(readlink -f -- "$final") || exit 3
    dir=\${final%/*}; [ -z "$dir" ] && dir=/
    [ -d "$final" ] && exit 12
    { [ -x "$dir" ] && [ -w "$dir" ]; } || exit 6
  fi
  if [ -e "$final" ]; then
    [ -f "$final" ] || exit 13
    [ -w "$final" ] || exit 6
  fi
fi
[ -e "$final" ] && printf 'replacing\\n' >&2
__sd_free() {
  free=$(df -Pk -- "$dir" 2>/dev/null | awk 'NR == 2 { print $4 }')
  case $free in ''|*[!0-9]*) free= ;; *) free=$((free * 1024)) ;; esac
}
__sd_free
if [ -n "$free" ] && [ "$free" -lt "$size" ]; then printf 'free %s\\n' "$free" >&2; exit 8; fi
if [ "$mode" = check ]; then printf 'ready %s\\0' "$final"; exit 0; fi
tmp=$dir/.sdesk-upload-$$-$RANDOM
trap 'rm -f -- "$tmp"' EXIT
# The sandbox's df may be wrong (or lie): running out of space while writing is said as such, with
# the free space once the partial file is gone.
__sd_nospace() {
  rm -f -- "$tmp"; printf '%s\\n' "$1" >&2
  case $1 in *'No space'*|*'quota exceeded'*) __sd_free; [ -n "$free" ] && printf 'free %s\\n' "$free" >&2 ;; esac
  exit 9
}
err=$( { : > "$tmp"; } 2>&1 ) || { case $err in *'No space'*|*'quota exceeded'*) __sd_nospace "$err" ;; esac; exit 6; }
if [ -f "$final" ]; then m=$(stat -c %a -- "$final") && chmod "$(printf %o "$((8#$m & 8#777))")" "$tmp"; fi
printf 'ready %s\\0' "$final"
err=$(cat 2>&1 > "$tmp") || __sd_nospace "$err"
got=$(stat -c %s -- "$tmp") || exit 9
[ "$got" = "$size" ] || { printf 'got %s\\n' "$got" >&2; exit 10; }
mv -f -- "$tmp" "$final" || exit 6
trap - EXIT
printf 'done %s\\0' "$final"
`;

const DOWNLOAD = `${PRELUDE}
[ -e "$p" ] || __sd_absent
[ -d "$p" ] && exit 4
[ -f "$p" ] || exit 4
[ -r "$p" ] || exit 6
size=$(stat -c %s -- "$p") || exit 6
printf 'size %s %s\\0' "$size" "$abs"
exec cat -- "$p"
`;

/** ", the old NAME is untouched" when the file being written replaces one (the script says `replacing`). */
function untouched(stderr: string, ctx: { name?: string }): string {
  return /^replacing$/m.test(stderr) ? `; the old ${ctx.name} is untouched` : '';
}

/** What a script's exit code means, as an error the person can act on. */
function failure(code: number | null, path: string, stderr: string, ctx: { size?: number; name?: string } = {}): SandboxDeskError {
  const num = (re: RegExp) => Number(re.exec(stderr)?.[1] ?? NaN);
  switch (code) {
    case 3:
      return new SandboxDeskError('not_found', `${path} does not exist in the sandbox`);
    case 4:
      return new SandboxDeskError('invalid_input', `${path} is not ${ctx.name === undefined ? 'a regular file' : 'a folder'}`);
    case 6:
      return new SandboxDeskError('refused', `${path} is not writable or not accessible to the sandbox user`, {
        hint: 'choose a folder the sandbox user owns (the session cwd or home)',
      });
    case 8: {
      const free = num(/^free (\d+)$/m);
      return new SandboxDeskError(
        'no_space',
        `not enough space in ${path}: ${ctx.name} needs ${ctx.size} bytes, ${free} are free${untouched(stderr, ctx)}`,
        {
          hint: 'free space in the sandbox (or choose a folder on another filesystem); nothing was written',
          details: { free, size: ctx.size },
        },
      );
    }
    case 9:
      if (/No space left|quota exceeded/i.test(stderr)) {
        const free = num(/^free (\d+)$/m);
        return new SandboxDeskError(
          'no_space',
          `the sandbox ran out of space while writing ${ctx.name} into ${path}${Number.isNaN(free) ? '' : ` (${free} bytes are free)`}${untouched(stderr, ctx)}`,
          {
            hint: 'free space in the sandbox and try again; the partial file was removed',
            details: { ...(Number.isNaN(free) ? {} : { free }), size: ctx.size },
          },
        );
      }
      return new SandboxDeskError('backend_unavailable', `writing ${ctx.name} into ${path} failed: ${stderr.trim().slice(0, 300)}`);
    case 10:
      return new SandboxDeskError(
        'invalid_input',
        `the upload of ${ctx.name} ended after ${num(/^got (\d+)$/m)} of ${ctx.size} bytes; nothing was kept under its name`,
        { hint: 'send it again' },
      );
    case 11:
      return new SandboxDeskError('name_taken', `${path}/${ctx.name} already exists`);
    case 12:
      return new SandboxDeskError('invalid_input', `a folder named ${ctx.name} is already in ${path}`, {
        hint: 'rename the file, or upload it into that folder',
      });
    case 13:
      return new SandboxDeskError('invalid_input', `${path}/${ctx.name} is not a regular file (a device, a pipe or a socket)`, {
        hint: 'write it with a command (execute_shell_command) if that is what you mean',
      });
    default:
      return new SandboxDeskError('backend_unavailable', `the file transfer failed (exit ${code}: ${stderr.trim().slice(0, 300)})`);
  }
}

/** A running transfer script: its first stdout record, then its exit. */
interface Script {
  child: ChildProcessWithoutNullStreams;
  /** The first record of stdout, or null when stdout ended without one (the script failed its checks). */
  header: Promise<string | null>;
  exit: Promise<{ code: number | null; stderr: string; path: string }>;
}

function runScript(t: FileTarget, script: string, args: string[], asked: string): Script {
  const argv = remoteArgv(t.env, { user: t.user, interactive: false }, [
    'bash',
    '-c',
    script,
    'sandbox-desk',
    t.cwd,
    t.env.getTempDir(),
    ...args,
  ]);
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
  const err: Buffer[] = [];
  let errBytes = 0;
  child.stderr.on('data', (c: Buffer) => {
    // Only diagnostics come this way: keep the first 64 KiB.
    if (errBytes < 65_536) err.push(c);
    errBytes += c.length;
  });
  child.stdin.on('error', () => undefined);
  const exit = new Promise<{ code: number | null; stderr: string; path: string }>((resolve, reject) => {
    child.on('error', (e) => reject(new SandboxDeskError('backend_unavailable', `could not run ${argv[0]}: ${e.message}`)));
    child.on('close', (code) => {
      const stderr = Buffer.concat(err).toString('utf8');
      resolve({ code, stderr: afterPath(stderr), path: printable(resolvedPath(stderr, asked)) });
    });
  });
  exit.catch(() => undefined);
  return { child, header: firstRecord(child.stdout), exit };
}

/**
 * Reads stdout up to its first NUL byte and puts the rest back, so a later pipe() sees only the
 * payload. Null when the stream ends first, or sends more than `max` bytes without one.
 */
export function firstRecord(stream: Readable, max = 16_384): Promise<string | null> {
  return new Promise((resolve) => {
    let buf: Buffer = Buffer.alloc(0);
    const done = (record: string | null) => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('close', onEnd);
      resolve(record);
    };
    const onData = (c: Buffer) => {
      buf = buf.length ? Buffer.concat([buf, c]) : c;
      const end = buf.indexOf(0);
      if (end >= 0) {
        stream.pause();
        const rest = buf.subarray(end + 1);
        done(buf.subarray(0, end).toString('utf8'));
        if (rest.length) stream.unshift(rest);
      } else if (buf.length > max) done(null);
    };
    const onEnd = () => done(null);
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('close', onEnd);
  });
}

export interface UploadTarget {
  /** The folder (relative to the session's cwd, or absolute). */
  dir: string;
  name: string;
  size: number;
}

function checkSize(size: number): void {
  if (!Number.isSafeInteger(size) || size < 0)
    throw new SandboxDeskError('invalid_input', `size must be a whole number of bytes, got ${size}`);
}

/**
 * Checks that `name` can be uploaded into `dir` (folder there and writable, no folder of that name,
 * enough free space) without writing anything: what the window asks before it sends the bytes.
 */
export async function checkUpload(t: FileTarget, u: UploadTarget): Promise<{ path: string }> {
  assertFileName(u.name);
  checkSize(u.size);
  const s = runScript(t, INTO_DIR, [u.dir, u.name, String(u.size), 'check'], u.dir);
  s.child.stdin.end();
  // Anything after the record is not read: drained, so a script that goes on writing still ends.
  void s.header.then(() => s.child.stdout.resume());
  const [header, exit] = await Promise.all([s.header, s.exit]);
  if (exit.code !== 0 || !header?.startsWith('ready ')) throw failure(exit.code, exit.path, exit.stderr, u);
  return { path: header.slice('ready '.length) };
}

export interface UploadSink {
  /** Where the file will be once complete (absolute, in the sandbox). */
  path: string;
  /** Write exactly `size` bytes here, then end it. */
  input: Writable;
  /** Settles once the file is under its final name (or fails: then nothing is under that name). */
  done: Promise<{ path: string; bytes: number }>;
  /** Stops the transfer; the partial file is removed. */
  abort(): void;
}

/** Starts an upload: resolves once the sandbox has checked the target and waits for the bytes. */
export function startUpload(t: FileTarget, u: UploadTarget): Promise<UploadSink> {
  return openUpload(t, u, 'write');
}

async function openUpload(t: FileTarget, u: UploadTarget, mode: 'write' | 'replace'): Promise<UploadSink> {
  assertFileName(u.name);
  checkSize(u.size);
  const s = runScript(t, INTO_DIR, [u.dir, u.name, String(u.size), mode], u.dir);
  const header = await s.header;
  if (!header?.startsWith('ready ')) {
    s.child.stdin.destroy();
    const exit = await s.exit;
    throw failure(exit.code, exit.path, exit.stderr, u);
  }
  s.child.stdout.resume();
  const path = header.slice('ready '.length);
  const done = s.exit.then((exit) => {
    if (exit.code !== 0) throw failure(exit.code, printable(posix.dirname(path)), exit.stderr, u);
    return { path, bytes: u.size };
  });
  done.catch(() => undefined);
  return {
    path,
    input: s.child.stdin,
    done,
    // Ending stdin early is enough: the script sees fewer bytes than announced and removes its file.
    // The kill is for a transport that would not pass the EOF on.
    abort: () => {
      s.child.stdin.destroy();
      setTimeout(() => s.child.kill('SIGKILL'), 10_000).unref();
    },
  };
}

/**
 * write_file: `content` replaces the file at `path` (offset 0), or is appended to a file that has
 * exactly `offset` bytes (the next chunk of a large file). A whole write goes through the upload
 * mechanism above — a temporary name in the same folder, renamed once complete — so a full disk or a
 * cut connection leaves the old file as it was and nothing under a new name.
 */
export async function writeSandboxFile(t: FileTarget, path: string, content: Buffer, offset = 0): Promise<{ path: string; bytes: number }> {
  if (offset > 0) return appendSandboxFile(t, path, content, offset);
  if (path.endsWith('/'))
    throw new SandboxDeskError('invalid_input', `${path} ends with /: that names a folder, not a file`, {
      hint: 'give the file name after the folder, e.g. dir/file.txt',
    });
  const slash = path.lastIndexOf('/');
  const dir = slash < 0 ? '.' : slash === 0 ? '/' : path.slice(0, slash);
  const name = path.slice(slash + 1);
  const sink = await openUpload(t, { dir, name, size: content.length }, 'replace');
  sink.input.end(content);
  return sink.done;
}

export interface DownloadSource {
  /** Where the sandbox says the file is (absolute): for messages only (see `printable`). */
  path: string;
  /** The file's own name (for Content-Disposition): the last part of the path asked for, never the sandbox's. */
  name: string;
  /** The size the sandbox announced: `output` carries exactly this many bytes, or fails. */
  size: number;
  output: Readable;
  /** Settles once the script ended and exactly `size` bytes went through `output` (or fails). */
  done: Promise<void>;
  abort(): void;
}

/** Starts a download: resolves with the file's size once the sandbox has opened it. */
export async function startDownload(t: FileTarget, path: string): Promise<DownloadSource> {
  const s = runScript(t, DOWNLOAD, [path], path);
  s.child.stdin.end();
  const header = await s.header;
  const m = header ? /^size (\d{1,15}) (.*)$/s.exec(header) : null;
  if (!m) {
    s.child.stdout.resume();
    const exit = await s.exit;
    if (exit.code === 0) {
      s.child.kill('SIGKILL');
      throw new SandboxDeskError('backend_unavailable', `the sandbox did not announce the size of ${path} before its bytes`, {
        hint: 'the sandbox’s bash, stat or cat does not behave as expected; nothing was written',
      });
    }
    throw failure(exit.code, exit.path, exit.stderr);
  }
  const size = Number(m[1]);
  const abs = m[2] || path;
  const counted = countedOutput(s, size, path);
  return {
    path: abs,
    name: posix.basename(path),
    size,
    output: counted.output,
    done: counted.done,
    abort: () => s.child.kill('SIGKILL'),
  };
}

/**
 * The script's stdout, held to the size it announced: a byte past it fails at once (and stops the
 * script), an end short of it fails at the end — a file truncated or grown in the sandbox while it was
 * copied is an error, never a short file that looks complete. `done` settles with the same outcome.
 */
function countedOutput(s: Script, size: number, path: string): { output: Readable; done: Promise<void> } {
  let got = 0;
  let settle!: (err: Error | null) => void;
  const done = new Promise<void>((resolve, reject) => {
    settle = (err) => (err ? reject(err) : resolve());
  });
  done.catch(() => undefined);
  const changed = (arrived: string) =>
    new SandboxDeskError(
      'backend_unavailable',
      `${path} changed in the sandbox while it was copied: ${size} bytes were announced, ${arrived} arrived`,
      { hint: 'copy it again once nothing in the sandbox is writing to it; the partial copy was not kept', details: { size } },
    );
  const output = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      got += chunk.length;
      if (got > size) {
        s.child.kill('SIGKILL');
        cb(changed(`more than ${size}`));
      } else cb(null, chunk);
    },
    flush(cb) {
      // The end of stdout: the exit status says whether cat itself failed; then the count decides.
      s.exit.then(
        (exit) => {
          const err = exit.code !== 0 ? failure(exit.code, exit.path, exit.stderr) : got !== size ? changed(String(got)) : null;
          settle(err);
          cb(err);
        },
        (err: Error) => {
          settle(err);
          cb(err);
        },
      );
    },
  });
  pipeline(s.child.stdout, output, (err) => {
    // A transform error, an abort or a consumer that went away: `done` says so too.
    if (err)
      settle(err instanceof SandboxDeskError ? err : new SandboxDeskError('cancelled', `the download of ${path} stopped: ${err.message}`));
  });
  return { output, done };
}

/** Makes folder `name` in `dir` (as the sandbox user); an existing entry of that name is `name_taken`. */
export async function makeSandboxDirectory(t: FileTarget, dir: string, name: string): Promise<{ path: string }> {
  assertFileName(name, 'folder');
  const s = runScript(t, INTO_DIR, [dir, name, '0', 'mkdir'], dir);
  s.child.stdin.end();
  void s.header.then(() => s.child.stdout.resume());
  const [header, exit] = await Promise.all([s.header, s.exit]);
  if (exit.code !== 0 || !header?.startsWith('done ')) throw failure(exit.code, exit.path, exit.stderr, { name });
  return { path: header.slice('done '.length) };
}
