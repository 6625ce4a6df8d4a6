/**
 * Which process inside a container opened a TCP connection, from this machine's /proc (issue 17:
 * "process where known"). The relay tells the proxy the connection's sandbox-side source port
 * (proxy-protocol.ts); here that port becomes a socket inode in the container's network namespace
 * (/proc/<init pid>/net/tcp), the inode becomes a process (the /proc/<pid>/fd links of the processes
 * in the container's pid namespace), and the process gets its name, command line, pid as the sandbox
 * sees it (NSpid) and its ancestry (PPid, up to the container's init).
 *
 * Best effort, and only where this user may read those /proc entries (root, or the owner of the
 * sandbox's processes): anything unreadable means "not known" (null), never an error. Asynchronous
 * (fs/promises): the proxy's event loop, and so every other connection, never waits for it.
 */
import { readFile, readdir, readlink } from 'node:fs/promises';
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

const text = (p: string): Promise<string | null> => readFile(p, 'utf8').catch(() => null);

/**
 * The process (in the pid namespace of `initPid`, a host pid) holding the TCP socket whose local port
 * is `port`. `procRoot` is /proc (a test may point elsewhere).
 */
export async function processOfPort(
  initPid: number,
  port: number,
  opts: { remotePort?: number; procRoot?: string } = {},
): Promise<ConnectionProcess | null> {
  const proc = opts.procRoot ?? '/proc';
  const tcp = [(await text(`${proc}/${initPid}/net/tcp`)) ?? '', (await text(`${proc}/${initPid}/net/tcp6`)) ?? ''].join('\n');
  const inode = socketInodeOf(tcp, port, opts.remotePort);
  if (!inode) return null;
  const want = `socket:[${inode}]`;
  const ns = await readlink(`${proc}/${initPid}/ns/pid`).catch(() => null);
  if (!ns) return null;
  const pids = (await readdir(proc).catch(() => [] as string[])).filter((n) => /^\d+$/.test(n));
  let found: number | null = null;
  // In batches: bounded concurrency, and the first match ends the search.
  for (let i = 0; i < pids.length && found === null; i += 32) {
    const batch = pids.slice(i, i + 32);
    const hits = await Promise.all(
      batch.map(async (p) => {
        if ((await readlink(`${proc}/${p}/ns/pid`).catch(() => null)) !== ns) return null;
        const fds = await readdir(`${proc}/${p}/fd`).catch(() => [] as string[]);
        for (const fd of fds) if ((await readlink(`${proc}/${p}/fd/${fd}`).catch(() => null)) === want) return Number(p);
        return null;
      }),
    );
    found = hits.find((h) => h !== null) ?? null;
  }
  if (found === null) return null;
  const status = await text(`${proc}/${found}/status`);
  if (!status) return null;
  const comm = ((await text(`${proc}/${found}/comm`)) ?? '?').trim();
  const cmdline = ((await text(`${proc}/${found}/cmdline`)) ?? '').replace(/\0+$/, '').replace(/\0/g, ' ');
  const pid = nsPidOf(status) ?? found;
  const ancestry: number[] = [];
  let host = ppidOf(status);
  for (let depth = 0; host !== null && host > 0 && depth < 64; depth++) {
    const st = await text(`${proc}/${host}/status`);
    if (!st || (await readlink(`${proc}/${host}/ns/pid`).catch(() => null)) !== ns) break;
    const p = nsPidOf(st);
    if (p === null) break;
    ancestry.push(p);
    if (host === initPid) break;
    host = ppidOf(st);
  }
  const shown = cmdline.length > 200 ? `${cmdline.slice(0, 199)}…` : cmdline;
  return { process: shown ? `${comm} (pid ${pid}): ${shown}` : `${comm} (pid ${pid})`, pid, ancestry };
}

/** `processOfPort` that gives up after `ms` (null): a log line waits at most that long for its process. */
export function processOfPortWithin(ms: number, ...args: Parameters<typeof processOfPort>): Promise<ConnectionProcess | null> {
  return Promise.race([processOfPort(...args).catch(() => null), new Promise<null>((r) => setTimeout(() => r(null), ms).unref())]);
}
