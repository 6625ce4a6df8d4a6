import { readFileSync } from 'node:fs';
import { runArgv } from '../run-argv.js';

/** Field 22 of /proc/PID/stat: when the process started, in clock ticks since boot. null when gone. */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may contain spaces: split after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z') return null; // a zombie has exited already
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

/**
 * Whether `pid` is still *this VM's* QEMU: alive, started when we recorded, and its command line names
 * this VM's QMP socket. A pid reused by another process after a crash is not mistaken for the VM.
 */
export function isVmProcess(pid: number, pidStart: string, qmpSocket: string): boolean {
  if (processStartTime(pid) !== pidStart) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      .split('\0')
      .some((w) => w.includes(qmpSocket));
  } catch {
    return false;
  }
}

export interface LaunchResult {
  ok: boolean;
  /** QEMU's own message when it refused to start (bad image, port taken, KVM unavailable). */
  message: string;
}

/**
 * Runs QEMU with `-daemonize`: the first process exits once the VM is set up (disks opened, port bound),
 * so its exit code and stderr say whether the VM could start at all.
 */
export async function launchQemu(argv: string[]): Promise<LaunchResult> {
  const r = await runArgv(argv, { timeoutMs: 60_000 });
  return { ok: r.code === 0, message: qemuMessage(r.stderr || r.stdout) };
}

/** QEMU's stderr as one line: its lines joined, without the repeated program-name prefix. */
export function qemuMessage(stderr: string): string {
  return stderr
    .split('\n')
    .map((l) => l.replace(/^qemu-system-[\w-]+:\s*/, '').trim())
    .filter(Boolean)
    .join('; ');
}

/** QEMU's message when the SSH forward could not bind its port. */
export function isPortClash(message: string): boolean {
  return /host forwarding rule|Could not set up host forwarding|Address already in use/i.test(message);
}

export function kill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

export async function waitForExit(pid: number, pidStart: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (processStartTime(pid) !== pidStart) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return processStartTime(pid) !== pidStart;
}
