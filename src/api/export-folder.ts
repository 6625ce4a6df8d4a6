import { accessSync, constants, mkdirSync, readdirSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { SandboxDeskError } from '../shared/errors.js';

/**
 * The folder an export writes into, chosen by whoever asked (a CLI flag, an API call): a new folder
 * of its own, or an existing empty one — never a folder with files in it (`--out /etc`, `--out ~`),
 * whose same-named files an export would overwrite. Only the last component is made, after checking
 * that its parent is a real, writable folder: a recursive mkdir on such a path can loop for good
 * (Node's on `/proc/x` spins at 100 % CPU and, in `serve`, blocks every request).
 */
export class ExportFolder {
  private readonly written: string[] = [];

  private constructor(
    readonly dir: string,
    /** Made by this export (removed again if the export fails). */
    private readonly made: boolean,
  ) {}

  /** Checks `out` and makes it if it is new; throws an error that says what to choose instead. */
  static open(out: string, flag = '--out'): ExportFolder {
    if (!out.trim() || out.includes('\0'))
      throw new SandboxDeskError('invalid_input', `${flag} must name a folder`, { hint: `e.g. ${flag} ./replay-export` });
    const dir = isAbsolute(out) ? out : resolve(out);
    const hint = `choose a new folder (it is made for the export, e.g. ${flag} ./replay-export) or an empty one`;
    const existing = statOf(dir);
    if (existing) {
      if (!existing.isDirectory()) throw new SandboxDeskError('invalid_input', `${flag} ${dir} is a file, not a folder`, { hint });
      let entries: string[];
      try {
        entries = readdirSync(dir);
      } catch (err) {
        throw refused(dir, flag, err, hint);
      }
      if (entries.length > 0)
        throw new SandboxDeskError(
          'invalid_input',
          `${flag} ${dir} is not empty (${entries.length} entries): an export would overwrite them`,
          {
            hint,
          },
        );
      try {
        accessSync(dir, constants.W_OK | constants.X_OK);
      } catch (err) {
        throw refused(dir, flag, err, hint);
      }
      return new ExportFolder(dir, false);
    }
    const parent = dirname(dir);
    const up = statOf(parent);
    if (!up)
      throw new SandboxDeskError('invalid_input', `${flag} ${dir}: its parent folder ${parent} does not exist`, {
        hint: `make ${parent} first, or ${hint}`,
      });
    if (!up.isDirectory()) throw new SandboxDeskError('invalid_input', `${flag} ${dir}: ${parent} is not a folder`, { hint });
    try {
      accessSync(parent, constants.W_OK | constants.X_OK);
      mkdirSync(dir);
    } catch (err) {
      throw refused(dir, flag, err, hint);
    }
    return new ExportFolder(dir, true);
  }

  /** The path of `name` in the folder, for a writer that makes the file itself (ffmpeg); removed on `discard`. */
  path(name: string): string {
    const file = join(this.dir, name);
    this.written.push(file);
    return file;
  }

  /** Writes a new file (`wx`: never over one that appeared meanwhile). */
  write(name: string, data: string | Buffer): string {
    const file = this.path(name);
    writeFileSync(file, data, { flag: 'wx' });
    return file;
  }

  /** The export failed: what it wrote goes, and the folder too if the export made it (a retry may use the same name). */
  discard(): void {
    for (const f of this.written) rmSync(f, { force: true });
    if (this.made) {
      try {
        rmdirSync(this.dir);
      } catch {
        // Something else was put there meanwhile: leave it.
      }
    }
  }
}

function statOf(path: string) {
  try {
    return statSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
    throw new SandboxDeskError('refused', `cannot look at ${path}: ${(err as Error).message}`, { cause: err });
  }
}

/** A folder that cannot be read or made (permissions, a read-only or pseudo filesystem such as /proc). */
function refused(dir: string, flag: string, err: unknown, hint: string): SandboxDeskError {
  const code = (err as NodeJS.ErrnoException).code ?? 'error';
  const why: Record<string, string> = {
    EACCES: 'permission denied',
    EPERM: 'permission denied',
    EROFS: 'the filesystem is read-only',
    ENOENT: 'that filesystem does not take new folders (a pseudo filesystem such as /proc or /sys)',
    ENOSPC: 'the disk is full',
    EEXIST: 'something of that name appeared meanwhile',
  };
  return new SandboxDeskError('refused', `${flag} ${dir} cannot be used for the export: ${why[code] ?? code}`, { hint, cause: err });
}
