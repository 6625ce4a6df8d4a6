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
