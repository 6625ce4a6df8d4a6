import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { followFile, readTail } from '../../platform/file-tail.js';
import type { IDisposable } from '../../shared/lifecycle.js';
import { SandboxDeskError } from '../../shared/errors.js';
import type { LogCapability, LogFollower, LogSourceSpec, ResourceCapability, ResourceSample } from '../observability.js';
import type { SandboxRef } from '../provider.js';
import type { VmFiles } from './vm-files.js';
import { sharesFor } from './virtiofs.js';

/** The host files a VM's logs are in: its serial console and one virtiofsd log per shared folder. */
export function vmLogFiles(files: VmFiles, ref: SandboxRef): Array<{ id: string; label: string; path: string }> {
  return [
    { id: 'serial', label: 'Serial console', path: files.serialLog },
    ...sharesFor(files, ref.mounts).map((s, i) => ({ id: `virtiofsd-${i}`, label: `virtiofsd (${s.sandboxPath})`, path: s.log })),
  ];
}

export function vmLogs(filesOf: (ref: SandboxRef) => VmFiles): LogCapability<SandboxRef> {
  const pathOf = (ref: SandboxRef, source: string): string => {
    const f = vmLogFiles(filesOf(ref), ref).find((x) => x.id === source);
    if (!f) throw new SandboxDeskError('not_found', `the VM has no log ${source}`);
    return f.path;
  };
  return {
    sources: (ref): Promise<LogSourceSpec[]> =>
      Promise.resolve(
        vmLogFiles(filesOf(ref), ref).map((f) => {
          const exists = existsSync(f.path);
          return { id: f.id, label: f.label, exists, detail: exists ? f.path : `${f.path} is not there (the VM has not booted yet)` };
        }),
      ),
    read: async (ref, source, tail) => readTail(pathOf(ref, source), tail),
    follow: async (ref, source, tail, to: LogFollower): Promise<IDisposable> => followFile(pathOf(ref, source), { tail }, to.onData),
  };
}

/** Fields 14 and 15 of /proc/PID/stat (utime, stime) in clock ticks; the name in field 2 may hold spaces and parens. */
export function cpuTicksFromStat(stat: string): number {
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // rest[0] is field 3 (state): utime is field 14, stime field 15.
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error(`unexpected /proc stat line: ${stat.slice(0, 80)}`);
  return utime + stime;
}

/** VmRSS of /proc/PID/status, in bytes (0 when absent, e.g. a zombie). */
export function rssFromStatus(status: string): number {
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  return m ? Number(m[1]) * 1024 : 0;
}

let clockTicks: number | null = null;
/** USER_HZ: 100 on every Linux we know of, asked once anyway. */
function ticksPerSecond(): number {
  if (clockTicks === null) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** One reading of a process's CPU time and resident memory; null when it is gone. */
export function sampleProcess(pid: number, memoryLimitBytes: number | null, now = Date.now()): ResourceSample | null {
  let stat: string;
  let status: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return null;
  }
  return {
    cpuNs: (cpuTicksFromStat(stat) / ticksPerSecond()) * 1e9,
    atMs: now,
    memoryBytes: rssFromStatus(status),
    memoryLimitBytes,
  };
}

/** The QEMU process's counters: all the VM's vCPUs run in it, so its CPU time is the VM's. */
export function vmResources(live: (ref: SandboxRef) => { pid: number; memoryBytes: number | null } | null): ResourceCapability<SandboxRef> {
  return {
    sample: (ref) => {
      const run = live(ref);
      const s = run ? sampleProcess(run.pid, run.memoryBytes) : null;
      // RSS of QEMU, not the guest's own use: labelled, so it is not shown as "1.3 GiB of 1.0 GiB".
      return Promise.resolve(s ? { ...s, memoryOf: 'vm-process' as const } : null);
    },
  };
}
