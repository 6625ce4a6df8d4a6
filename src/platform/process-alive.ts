import { readFileSync } from 'node:fs';

/**
 * Whether the process `pid` still runs: signal 0 checks without sending anything. EPERM means it
 * exists but belongs to another user — still alive (a lock or socket of theirs is not left over).
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
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
