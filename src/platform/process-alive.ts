import { readFileSync } from 'node:fs';

/**
 * Whether the process `pid` still runs: signal 0 checks without sending anything. EPERM means it
 * exists but belongs to another user — still alive (a lock or socket of theirs is not left over).
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A process killed a moment ago (kill -9 of a service) stays a zombie until its parent reaps it: its
  // files, sockets and locks are already released, so for whoever asks it is gone.
  return !['Z', 'X'].includes(processState(pid) ?? '');
}

/** The state letter of `pid` (/proc/<pid>/stat, field 3: R, S, D, Z, X, …), or null without /proc. */
function processState(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] ?? null;
  } catch {
    return null;
  }
}

/**
 * When the process `pid` started, in clock ticks since boot (/proc/<pid>/stat, field 22), or null when
 * it does not exist or there is no /proc. With the pid it names one process: a pid reused after a
 * reboot or a wrap has another start time, so a lock of the dead one is not mistaken for a live one.
 */
export function processStartTime(pid: number, readStat: (file: string) => string = (f) => readFileSync(f, 'utf8')): string | null {
  try {
    const stat = readStat(`/proc/${pid}/stat`);
    // The command name (field 2) is in parentheses and may hold spaces or ')': count from the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] ?? null;
  } catch {
    return null;
  }
}
