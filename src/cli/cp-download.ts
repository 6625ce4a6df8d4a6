import { createWriteStream, existsSync, lstatSync, openSync, readdirSync, renameSync, rmSync, statfsSync, statSync } from 'node:fs';
import { basename, dirname, join, sep } from 'node:path';
import { posix } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { HttpDownload as DownloadSource } from '../client/file-transfer.js';
import { SandboxDeskError } from '../shared/errors.js';
import { processAlive } from '../platform/process-alive.js';
import { FILE_NAME_MAX_BYTES } from '../shared/file-names.js';
import { cancelOnInterrupt, type SignalSource } from './interrupt.js';
import type { Out } from './output.js';

/**
 * The host side of `sandbox-desk cp NAME:PATH LOCAL`. Everything that chooses a place on this machine
 * comes from the person's own two arguments, decided before the sandbox is asked for anything: the
 * sandbox only supplies bytes, and those are counted against the size it announced. The bytes go to a
 * part file next to the target (`.NAME.sdesk-part-PID`), renamed over the target only once complete;
 * Ctrl-C or SIGTERM removes it, and one left by a process that was killed outright (SIGKILL, a crash)
 * is swept by the next download into that folder — the PID in its name says whether its owner lives.
 */

/** Where a download lands: the folder, the file's final path there, and its name. */
export interface LocalTarget {
  dir: string;
  target: string;
  name: string;
}

/**
 * The local file for a download of sandbox path `asked` to local `dest`, as `cp` decides it: into
 * `dest` under the asked file's own name when `dest` is a folder, else `dest` itself. A folder that is
 * not there is a clear `not_found` here, before any transfer starts.
 */
export function localTarget(asked: string, dest: string, sandbox: string): LocalTarget {
  const askedName = posix.basename(asked);
  const namesFile = !asked.endsWith('/') && askedName !== '' && askedName !== '.' && askedName !== '..';
  if (existsSync(dest) && statSync(dest).isDirectory()) {
    if (!namesFile)
      throw new SandboxDeskError('invalid_input', `${sandbox}:${asked} does not name a file: cp copies one file`, {
        hint: `name it, e.g. sandbox-desk cp ${sandbox}:report.txt ${dest}`,
      });
    return checked({ dir: dest, target: join(dest, askedName), name: askedName });
  }
  if (dest.endsWith('/') || dest.endsWith(sep) || basename(dest) === '..' || basename(dest) === '.')
    throw missingFolder(dest.length > 1 ? dest.replace(/[\\/]+$/, '') || dest : dest);
  const dir = dirname(dest);
  if (!existsSync(dir)) throw missingFolder(dir);
  if (!statSync(dir).isDirectory())
    throw new SandboxDeskError('invalid_input', `${dir} is not a folder on this machine`, {
      hint: 'give a folder that exists, or a file name in one',
    });
  return checked({ dir, target: dest, name: basename(dest) });
}

function missingFolder(dir: string): SandboxDeskError {
  return new SandboxDeskError('not_found', `the folder ${dir} does not exist on this machine`, {
    hint: `create it first (mkdir -p ${JSON.stringify(dir)}) or copy into a folder that exists`,
  });
}

function checked(t: LocalTarget): LocalTarget {
  if (existsSync(t.target) && statSync(t.target).isDirectory())
    throw new SandboxDeskError('invalid_input', `a folder named ${t.name} is already in ${t.dir}`, {
      hint: 'copy into that folder, or give the file another name',
    });
  return t;
}

const PART = /^\.(.*)\.sdesk-part-(\d+)$/s;

/** The part file's name for `name`: NAME cut (at a character) so the whole stays within NAME_MAX. */
export function partName(name: string, pid: number): string {
  const suffix = `.sdesk-part-${pid}`;
  let stem = name;
  while (Buffer.byteLength(`.${stem}${suffix}`) > FILE_NAME_MAX_BYTES) stem = Array.from(stem).slice(0, -1).join('');
  return `.${stem}${suffix}`;
}

/**
 * Removes the part files in `dir` whose download process is gone (killed outright, so it could not
 * clean up). Only regular files of that exact shape, never this process's own; what cannot be removed
 * is left alone. Returns the names removed.
 */
export function sweepStaleParts(dir: string, alive: (pid: number) => boolean = processAlive): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const n of names) {
    const m = PART.exec(n);
    if (!m) continue;
    const pid = Number(m[2]);
    if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid || alive(pid)) continue;
    const p = join(dir, n);
    try {
      if (!lstatSync(p).isFile()) continue;
      rmSync(p);
      removed.push(n);
    } catch {
      // Someone else's file, or gone already: not ours to insist on.
    }
  }
  return removed;
}

/** This machine's free bytes in `dir`, or null when it cannot be told. */
function freeBytes(dir: string): number | null {
  try {
    const s = statfsSync(dir);
    return Number(s.bavail) * Number(s.bsize);
  } catch {
    return null;
  }
}

/** A local write error, as something the person can act on (the partial file is removed either way). */
function localWriteError(err: NodeJS.ErrnoException, t: LocalTarget): SandboxDeskError {
  if (err.code === 'ENOSPC')
    return new SandboxDeskError('no_space', `this machine's disk filled up while writing ${t.target}`, {
      hint: 'free space (or copy to another disk) and try again; the partial file was removed',
    });
  if (err.code === 'EACCES' || err.code === 'EPERM' || err.code === 'EROFS')
    return new SandboxDeskError('refused', `cannot write in ${t.dir} on this machine (${err.code})`, {
      hint: 'copy into a folder you can write to',
    });
  if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return missingFolder(t.dir);
  return new SandboxDeskError('internal', `writing ${t.target} failed: ${err.message}`, { cause: err });
}

/**
 * Streams `src` into `t.target` through a part file, renamed over the target only once exactly the
 * announced bytes were written. On any failure — a short or long transfer, a full disk, Ctrl-C or
 * SIGTERM — the part file is removed and an existing target is left as it was.
 */
export async function receiveDownload(
  src: DownloadSource,
  t: LocalTarget,
  out: Out,
  signals: SignalSource = process,
): Promise<{ bytes: number }> {
  sweepStaleParts(t.dir);
  const free = freeBytes(t.dir);
  if (free !== null && free < src.size) {
    src.abort();
    throw new SandboxDeskError('no_space', `not enough space in ${t.dir}: the file has ${src.size} bytes, ${free} are free`, {
      hint: 'free space on this machine (or copy to another disk); nothing was written',
      details: { free, size: src.size },
    });
  }
  const part = join(t.dir, partName(t.name, process.pid));
  // Our own PID's leftover (a PID reused after a crash) is ours to replace; `wx` then makes sure the
  // part file is new, so nothing planted under that name redirects the write.
  rmSync(part, { force: true });
  let fd: number;
  try {
    fd = openSync(part, 'wx');
  } catch (err) {
    src.abort();
    throw localWriteError(err as NodeJS.ErrnoException, t);
  }
  // Also on an exit no handler saw through (an uncaught error): the part file does not outlive us.
  const onExit = () => rmSync(part, { force: true });
  process.once('exit', onExit);
  const sink = createWriteStream(part, { fd });
  try {
    return await cancelOnInterrupt(
      out,
      async (signal) => {
        const cancelled = new SandboxDeskError('cancelled', `the copy to ${t.target} was interrupted; the partial file was removed`);
        signal.addEventListener('abort', () => {
          src.abort();
          src.output.destroy(cancelled);
        });
        try {
          await pipeline(src.output, sink);
          await src.done;
        } catch (err) {
          if (signal.aborted) throw cancelled;
          if (err instanceof SandboxDeskError) throw err;
          throw localWriteError(err as NodeJS.ErrnoException, t);
        }
        // What is on disk is what counts: the bytes written, checked once more against the announcement.
        const bytes = sink.bytesWritten;
        if (bytes !== src.size)
          throw new SandboxDeskError('backend_unavailable', `${t.target}: ${bytes} bytes written, ${src.size} were announced`, {
            hint: 'copy it again; the partial file was removed',
          });
        renameSync(part, t.target);
        return { bytes };
      },
      signals,
    );
  } catch (err) {
    src.abort();
    sink.destroy();
    rmSync(part, { force: true });
    throw err;
  } finally {
    process.removeListener('exit', onExit);
  }
}
