import { linkSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { processAlive, processStartTime } from '../platform/process-alive.js';

/**
 * One service per data directory: `<data dir>/service.lock` holds the owner's pid and process start
 * time. It is created whole and atomically (written to a private file, then hard-linked into place,
 * which fails if the name exists), so nobody ever reads half a lock. A lock whose process is dead (or
 * whose pid now belongs to a process started at another time) is stale and taken over.
 */
export interface LockHolder {
  pid: number;
  startTime: string | null;
}

export type LockResult = { acquired: true; release(): void } | { acquired: false; holder: LockHolder };

export interface LockDeps {
  pid: number;
  alive(pid: number): boolean;
  startTime(pid: number): string | null;
}

const realDeps = (): LockDeps => ({ pid: process.pid, alive: processAlive, startTime: processStartTime });

function parse(text: string): LockHolder | null {
  try {
    const v = JSON.parse(text) as Partial<LockHolder>;
    return typeof v.pid === 'number' && Number.isInteger(v.pid) && v.pid > 0 ? { pid: v.pid, startTime: v.startTime ?? null } : null;
  } catch {
    return null;
  }
}

function live(holder: LockHolder | null, deps: LockDeps): boolean {
  if (!holder || !deps.alive(holder.pid)) return false;
  // The same pid started at another time is another process: the owner is gone.
  return holder.startTime === null || deps.startTime(holder.pid) === null || deps.startTime(holder.pid) === holder.startTime;
}

export function acquireServiceLock(file: string, deps: LockDeps = realDeps()): LockResult {
  const mine: LockHolder = { pid: deps.pid, startTime: deps.startTime(deps.pid) };
  const text = JSON.stringify(mine) + '\n';
  const tmp = `${file}.${deps.pid}.tmp`;
  writeFileSync(tmp, text, { mode: 0o600 });
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        linkSync(tmp, file);
        return {
          acquired: true,
          release: () => {
            // Only our own lock: never remove one a successor wrote after we were presumed dead.
            try {
              if (readFileSync(file, 'utf8') === text) unlinkSync(file);
            } catch {
              /* already gone */
            }
          },
        };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      let seen: string;
      try {
        seen = readFileSync(file, 'utf8');
      } catch {
        continue; // removed meanwhile: try again
      }
      const holder = parse(seen);
      if (live(holder, deps)) return { acquired: false, holder: holder as LockHolder };
      // Stale: moved aside atomically; if what was moved is not what we judged (another service took
      // it over meanwhile), it is put back where nobody has taken the name since.
      const aside = `${file}.${deps.pid}.stale`;
      try {
        renameSync(file, aside);
      } catch {
        continue;
      }
      if (readFileSync(aside, 'utf8') !== seen) {
        try {
          linkSync(aside, file);
        } catch {
          /* someone else holds it now; the loop sees them */
        }
      }
      unlinkSync(aside);
    }
    const holder = parse(readFileSyncSafe(file));
    return { acquired: false, holder: holder ?? { pid: 0, startTime: null } };
  } finally {
    unlinkSync(tmp);
  }
}

function readFileSyncSafe(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** The holder of a data dir's lock if it is alive (what a client checks before calling a socket stale). */
export function liveLockHolder(file: string, deps: LockDeps = realDeps()): LockHolder | null {
  const holder = parse(readFileSyncSafe(file));
  return live(holder, deps) ? holder : null;
}
