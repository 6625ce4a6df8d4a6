/**
 * Which process inside a container opened a TCP connection, from this machine's /proc (issue 17:
 * "process where known"). The relay tells the proxy the connection's sandbox-side source port
 * (proxy-protocol.ts); here that port becomes a socket inode in the container's network namespace
 * (/proc/<init pid>/net/tcp), the inode becomes a process (the /proc/<pid>/fd links of the processes
 * in the container's pid namespace), and the process gets its name, command line, pid as the sandbox
 * sees it (NSpid) and its ancestry (PPid, up to the container's init).
 *
 * Best effort, and only where this user may read those /proc entries (root, or the owner of the
 * sandbox's processes): anything unreadable means "not known" (null), never an error.
 *
 * Synchronous on purpose, and bounded (MAX_PROCESSES, MAX_FDS): the reads are of /proc, a few dozen
 * for a container's own processes (its cgroup's list), well under a millisecond in one go. Done
 * asynchronously (fs/promises, one thread-pool hop per read) the same lookup took 200 ms on a loaded
 * machine — by then a short request's client had closed its socket, and it was nobody's any more.
 */
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import type { ConnectionProcess } from './egress-proxy.js';

/** The inode of the socket whose local port is `port` (and, when given, remote port `remotePort`). */
export function socketInodeOf(netTcp: string, port: number, remotePort?: number): string | null {
  for (const line of netTcp.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 10) continue;
    const local = f[1]!.split(':');
    const remote = f[2]!.split(':');
    if (parseInt(local[1] ?? '', 16) !== port) continue;
    if (remotePort !== undefined && parseInt(remote[1] ?? '', 16) !== remotePort) continue;
    if (f[3] === '0A') continue; // a listening socket on that port is not the connection
    const inode = f[9]!;
    if (inode !== '0') return inode;
  }
  return null;
}

/** `NSpid:` of /proc/<pid>/status: the pid in the innermost namespace (the sandbox's view). */
export function nsPidOf(status: string): number | null {
  const m = /^NSpid:\s+([\d\s]+)$/m.exec(status);
  const last = m?.[1]!.trim().split(/\s+/).at(-1);
  return last ? Number(last) : null;
}

function ppidOf(status: string): number | null {
  const m = /^PPid:\s+(\d+)$/m.exec(status);
  return m ? Number(m[1]) : null;
}

/** At most this many processes are looked at, and this many descriptors of each. */
const MAX_PROCESSES = 2048;
const MAX_FDS = 4096;

function text(p: string): string | null {
  try {
    return readFileSync(p, 'utf8');
  } catch {
    return null;
  }
}

function link(p: string): string | null {
  try {
    return readlinkSync(p);
  } catch {
    return null;
  }
}

function list(p: string): string[] {
  try {
    return readdirSync(p);
  } catch {
    return [];
  }
}

/**
 * The process (in the pid namespace of `initPid`, a host pid) holding the TCP socket whose local port
 * is `port`, its inode found by reading the namespace's /proc/net/tcp. That read walks the kernel's whole
 * TCP hash (17–43 ms of kernel CPU here): it is the fallback for where the exact lookup
 * (sock-diag.ts, then processOfSocket) cannot run. `procRoot` is /proc (a test may point elsewhere).
 */
export async function processOfPort(
  initPid: number,
  port: number,
  opts: { remotePort?: number; procRoot?: string } = {},
): Promise<ConnectionProcess | null> {
  await Promise.resolve();
  const proc = opts.procRoot ?? '/proc';
  // IPv6 only when IPv4 did not have it (the relay's sandbox side is IPv4).
  const inode =
    socketInodeOf(text(`${proc}/${initPid}/net/tcp`) ?? '', port, opts.remotePort) ??
    socketInodeOf(text(`${proc}/${initPid}/net/tcp6`) ?? '', port, opts.remotePort);
  if (!inode) return null;
  return processOfSocket(initPid, Number(inode), opts);
}

/** The process (in the pid namespace of `initPid`) holding the socket with inode `inode`, as processOfPort describes it. */
export async function processOfSocket(initPid: number, inode: number, opts: { procRoot?: string } = {}): Promise<ConnectionProcess | null> {
  await Promise.resolve();
  const proc = opts.procRoot ?? '/proc';
  const want = `socket:[${inode}]`;
  const ns = link(`${proc}/${initPid}/ns/pid`);
  if (!ns) return null;
  // The container's own processes (its cgroup's list), all of this machine's only where that cannot be read.
  const pids = (cgroupPids(proc, initPid) ?? list(proc).filter((n) => /^\d+$/.test(n))).slice(0, MAX_PROCESSES);
  let found: number | null = null;
  for (const p of pids) {
    if (link(`${proc}/${p}/ns/pid`) !== ns) continue;
    for (const fd of list(`${proc}/${p}/fd`).slice(0, MAX_FDS)) {
      if (link(`${proc}/${p}/fd/${fd}`) === want) {
        found = Number(p);
        break;
      }
    }
    if (found !== null) break;
  }
  if (found === null) return null;
  return describeProcess(initPid, found, opts);
}

/**
 * The log's view of host pid `found` in the pid namespace of `initPid`: name, command line, pid as the
 * sandbox sees it and its ancestry. A handful of small /proc reads (one per ancestor), so it may run on
 * the proxy's own thread; null when the process is gone or not in that namespace.
 */
export function describeProcess(initPid: number, found: number, opts: { procRoot?: string } = {}): ConnectionProcess | null {
  const proc = opts.procRoot ?? '/proc';
  const ns = link(`${proc}/${initPid}/ns/pid`);
  if (!ns || link(`${proc}/${found}/ns/pid`) !== ns) return null;
  const status = text(`${proc}/${found}/status`);
  if (!status) return null;
  const comm = (text(`${proc}/${found}/comm`) ?? '?').trim();
  const cmdline = (text(`${proc}/${found}/cmdline`) ?? '').replace(/\0+$/, '').replace(/\0/g, ' ');
  const pid = nsPidOf(status) ?? found;
  const ancestry: number[] = [];
  let host = ppidOf(status);
  for (let depth = 0; host !== null && host > 0 && depth < 64; depth++) {
    const st = text(`${proc}/${host}/status`);
    if (!st || link(`${proc}/${host}/ns/pid`) !== ns) break;
    const p = nsPidOf(st);
    if (p === null) break;
    ancestry.push(p);
    if (host === initPid) break;
    host = ppidOf(st);
  }
  // One line, short: a wrapper's `bash -c <script>` would otherwise fill the log with the script.
  // The exec wrapper (src/exec/wrapper-script.ts) is itself the shell a command's builtins run in.
  const flat = cmdline.includes('__sd_enter') ? 'the command shell of sandbox-desk exec' : cmdline.replace(/\s+/g, ' ').trim();
  const shown = flat.length > 120 ? `${flat.slice(0, 119)}…` : flat;
  return { process: shown ? `${comm} (pid ${pid}): ${shown}` : `${comm} (pid ${pid})`, pid, ancestry };
}

/** The host pids in the cgroup of `pid` (v2, or v1's pids / systemd hierarchy), or null where that is not readable. */
function cgroupPids(proc: string, pid: number): string[] | null {
  if (proc !== '/proc') return null;
  const cg = text(`${proc}/${pid}/cgroup`) ?? '';
  const candidates: string[] = [];
  for (const line of cg.split('\n')) {
    const m = /^\d+:([^:]*):(\/.*)$/.exec(line);
    if (!m) continue;
    if (m[1] === '') candidates.push(`/sys/fs/cgroup${m[2]}`);
    else if (m[1]!.split(',').includes('pids')) candidates.push(`/sys/fs/cgroup/pids${m[2]}`);
    else if (m[1] === 'name=systemd') candidates.push(`/sys/fs/cgroup/systemd${m[2]}`);
  }
  for (const dir of candidates) {
    const pids = text(`${dir}/cgroup.procs`)
      ?.split('\n')
      .filter((n) => /^\d+$/.test(n));
    if (pids && pids.length > 0) return pids;
  }
  return null;
}

/** A lookup that gives up after `ms` (null): a log line waits at most that long for its process. */
export function within(ms: number, lookup: Promise<ConnectionProcess | null>): Promise<ConnectionProcess | null> {
  return Promise.race([lookup.catch(() => null), new Promise<null>((r) => setTimeout(() => r(null), ms).unref())]);
}
