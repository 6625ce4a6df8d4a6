/**
 * One TCP socket's inode, looked up by its exact 4-tuple with NETLINK_SOCK_DIAG (the kernel's
 * inet_diag, what `ss` uses) in a sandbox's network namespace: a hash lookup of one socket, instead of
 * reading /proc/<pid>/net/tcp — which walks the kernel's whole TCP hash (262144 buckets here) on every
 * read and cost 17–43 ms of kernel CPU per connection, on the same 2 cores as the traffic.
 *
 * Why by hand: Node has no netlink sockets and no setns, and the npm netlink packages are native
 * add-ons for rtnetlink; what is needed is one 72-byte request and one field of the answer. So the
 * messages are packed and parsed here (unit-tested), and a small stdlib-only Python helper — long
 * lived, one per proxy — does only what Node cannot: enter the namespace (setns through ctypes on
 * /proc/<pid>/ns/net), open a NETLINK_SOCK_DIAG socket there (kept per namespace: a socket stays in the
 * namespace it was made in), send our bytes and hand back the kernel's answer.
 *
 * Where the helper cannot run (no python3, or not allowed to enter the namespace: setns needs
 * CAP_SYS_ADMIN) the answer is `unavailable`, and the caller falls back to the /proc/net/tcp walk.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import net from 'node:net';
import { endianness } from 'node:os';

const SOCK_DIAG_BY_FAMILY = 20;
const NLM_F_REQUEST = 1;
const NLMSG_ERROR = 2;
const NLMSG_DONE = 3;
const AF_INET = 2;
const AF_INET6 = 10;
const IPPROTO_TCP = 6;
const NLMSG_HDRLEN = 16;
/** nlmsghdr + inet_diag_req_v2. */
export const REQUEST_LEN = NLMSG_HDRLEN + 56;
/** inet_diag_msg: family, state, timer, retrans (4), sockid (48), expires, rqueue, wqueue, uid (16), then the inode. */
const INODE_OFFSET = 4 + 48 + 16;
const ENOENT = 2;

/** A TCP connection as the socket that opened it sees it: its own address and port, and its peer's. */
export interface TcpTuple {
  src: string;
  sport: number;
  dst: string;
  dport: number;
}

/** The 16 address bytes of inet_diag_sockid (an IPv4 address in the first 4), or null for a bad address. */
export function addressBytes(ip: string): { family: number; bytes: Buffer } | null {
  const bytes = Buffer.alloc(16);
  if (net.isIPv4(ip)) {
    ip.split('.').forEach((p, i) => (bytes[i] = Number(p)));
    return { family: AF_INET, bytes };
  }
  if (!net.isIPv6(ip) || ip.includes('.') || ip.includes('%')) return null;
  const [head, tail] = ip.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  groups.forEach((g, i) => bytes.writeUInt16BE(parseInt(g, 16), i * 2));
  return { family: AF_INET6, bytes };
}

const LE = endianness() === 'LE';
const u16 = (b: Buffer, v: number, o: number): number => (LE ? b.writeUInt16LE(v, o) : b.writeUInt16BE(v, o));
const u32 = (b: Buffer, v: number, o: number): number => (LE ? b.writeUInt32LE(v, o) : b.writeUInt32BE(v, o));
const r16 = (b: Buffer, o: number): number => (LE ? b.readUInt16LE(o) : b.readUInt16BE(o));
const r32 = (b: Buffer, o: number): number => (LE ? b.readUInt32LE(o) : b.readUInt32BE(o));
const ri32 = (b: Buffer, o: number): number => (LE ? b.readInt32LE(o) : b.readInt32BE(o));

/**
 * SOCK_DIAG_BY_FAMILY for exactly one socket (no NLM_F_DUMP): the kernel looks the 4-tuple up in its
 * hash instead of walking it. Netlink headers and the inode are in host order; ports and addresses
 * in network order; the cookie ~0 (INET_DIAG_NOCOOKIE) means "whatever its cookie".
 */
export function packInetDiagRequest(t: TcpTuple, seq: number): Buffer {
  const src = addressBytes(t.src);
  const dst = addressBytes(t.dst);
  if (!src || !dst || src.family !== dst.family) throw new Error(`not a TCP 4-tuple: ${t.src} → ${t.dst}`);
  for (const p of [t.sport, t.dport]) if (!Number.isInteger(p) || p < 1 || p > 65535) throw new Error(`not a port: ${p}`);
  const b = Buffer.alloc(REQUEST_LEN);
  u32(b, REQUEST_LEN, 0);
  u16(b, SOCK_DIAG_BY_FAMILY, 4);
  u16(b, NLM_F_REQUEST, 6);
  u32(b, seq >>> 0, 8);
  u32(b, 0, 12);
  const r = NLMSG_HDRLEN;
  b[r] = src.family;
  b[r + 1] = IPPROTO_TCP;
  u32(b, 0xffffffff, r + 4); // idiag_states: any (an exact lookup does not filter by state)
  b.writeUInt16BE(t.sport, r + 8);
  b.writeUInt16BE(t.dport, r + 10);
  src.bytes.copy(b, r + 12);
  dst.bytes.copy(b, r + 28);
  u32(b, 0, r + 44); // idiag_if: any interface
  u32(b, 0xffffffff, r + 48);
  u32(b, 0xffffffff, r + 52);
  return b;
}

/** What the kernel said: the socket's inode (0: it is in TIME_WAIT, nobody's), or an errno (ENOENT: no such socket). */
export type DiagAnswer = { inode: number } | { errno: number };

/** Parses the answer to packInetDiagRequest (one or more netlink messages), matched by `seq`. */
export function parseInetDiagReply(buf: Buffer, seq: number): DiagAnswer | null {
  for (let off = 0; off + NLMSG_HDRLEN <= buf.length;) {
    const len = r32(buf, off);
    if (len < NLMSG_HDRLEN || off + len > buf.length) return null;
    const type = r16(buf, off + 4);
    if (r32(buf, off + 8) === seq >>> 0) {
      if (type === NLMSG_ERROR && len >= NLMSG_HDRLEN + 4) {
        const err = -ri32(buf, off + NLMSG_HDRLEN);
        if (err !== 0) return { errno: err };
      } else if (type === SOCK_DIAG_BY_FAMILY && len >= NLMSG_HDRLEN + INODE_OFFSET + 4) {
        return { inode: r32(buf, off + NLMSG_HDRLEN + INODE_OFFSET) };
      } else if (type === NLMSG_DONE) return { errno: ENOENT };
    }
    off += (len + 3) & ~3;
  }
  return null;
}

/**
 * The helper (see the top of this file). Protocol, one line each way: `<id> <pid> <request hex>` in,
 * `<id> ok <answer hex> <holder>` or `<id> err <errno>` out, where holder is the host pid (0: none
 * found) holding the socket among the processes in pid's pid namespace — found in the same step, by
 * the /proc/<pid>/fd links of the container's processes (its cgroup's list), so the proxy's thread
 * never walks them and the answer comes while the socket is surely still held; `<id> <pid> -` only opens the namespace's socket
 * (no answer). Errors of the namespace (setns, /proc) are `err`;
 * the kernel's answers, errors included, are `ok` (parsed on the Node side).
 */
export const SOCK_DIAG_HELPER = String.raw`
import ctypes, os, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000
NETLINK_SOCK_DIAG = 4
home = os.open("/proc/self/ns/net", os.O_RDONLY)
socks = {}
def enter(fd):
    if libc.setns(fd, CLONE_NEWNET) != 0:
        e = ctypes.get_errno(); raise OSError(e, os.strerror(e))
def sock_for(pid):
    fd = os.open("/proc/%d/ns/net" % pid, os.O_RDONLY)
    try:
        ino = os.fstat(fd).st_ino
        s = socks.pop(ino, None)
        if s is None:
            enter(fd)
            try:
                s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)
                s.settimeout(1.0)
            finally:
                # Back home at once; if that fails this process is in the wrong namespace: stop.
                try: enter(home)
                except OSError: os._exit(3)
            # A kept socket keeps its namespace alive: only the most recent few are kept.
            while len(socks) >= 16:
                socks.pop(next(iter(socks))).close()
        socks[ino] = s
        return ino, s
    finally:
        os.close(fd)
def ask(pid, req):
    ino, s = sock_for(pid)
    try:
        s.send(req)
        return s.recv(65536)
    except OSError:
        socks.pop(ino, None); s.close(); raise
def inode_in(ans):
    # The inode of a SOCK_DIAG_BY_FAMILY answer (nlmsghdr 16 bytes, then inet_diag_msg: inode at 68), else 0.
    if len(ans) < 16 + 72 or struct.unpack_from("=H", ans, 4)[0] != 20: return 0
    return struct.unpack_from("=I", ans, 16 + 68)[0]
def cgroup_pids(pid):
    # The container's own processes (its cgroup's list: v2, or v1's pids / systemd), else all of this machine's.
    dirs = []
    try:
        for line in open("/proc/%d/cgroup" % pid):
            f = line.rstrip("\n").split(":", 2)
            if len(f) != 3 or not f[2].startswith("/"): continue
            if f[1] == "": dirs.append("/sys/fs/cgroup" + f[2])
            elif "pids" in f[1].split(","): dirs.append("/sys/fs/cgroup/pids" + f[2])
            elif f[1] == "name=systemd": dirs.append("/sys/fs/cgroup/systemd" + f[2])
    except OSError: pass
    for d in dirs:
        try: pids = [x for x in open(d + "/cgroup.procs").read().split() if x.isdigit()]
        except OSError: continue
        if pids: return pids
    return [x for x in os.listdir("/proc") if x.isdigit()]
last = {}  # init pid -> the holder found last time
def holds(p, ns, want):
    try:
        if os.readlink("/proc/%s/ns/pid" % p) != ns: return False
        fds = os.listdir("/proc/%s/fd" % p)
    except OSError: return False
    for fd in fds[:4096]:
        try:
            if os.readlink("/proc/%s/fd/%s" % (p, fd)) == want: return True
        except OSError: pass
    return False
def holder(pid, inode):
    # The host pid, in the pid namespace of pid, holding socket:[inode] (0: none); bounded like process-of-connection.ts.
    # The walk of every process's descriptors is most of a lookup's CPU (measured: ~0.6 ms of a loaded
    # core for a small sandbox): the last holder is looked at first, since a client that connects
    # often (a browser, a loop) is usually the next one's too. It must still hold the socket: no guess.
    want = "socket:[%d]" % inode
    try: ns = os.readlink("/proc/%d/ns/pid" % pid)
    except OSError: return 0
    if pid in last and holds(last[pid], ns, want): return last[pid]
    for p in cgroup_pids(pid)[:2048]:
        if holds(p, ns, want):
            last[pid] = int(p)
            return int(p)
    return 0
out = sys.stdout
for line in sys.stdin:
    f = line.split()
    if len(f) != 3: continue
    try:
        if f[2] == "-":
            sock_for(int(f[1])); continue
        pid = int(f[1])
        a = ask(pid, bytes.fromhex(f[2]))
        ino = inode_in(a)
        ans = "ok %s %d" % (a.hex(), holder(pid, ino) if ino else 0)
    except OSError as e:
        ans = "err %d" % (e.errno or 0)
    except ValueError:
        ans = "err 22"
    out.write("%s %s\n" % (f[0], ans)); out.flush()
`;

/**
 * The socket's inode and the host pid holding it (0: not found among the namespace's processes), null
 * when the kernel has no such socket (gone, or TIME_WAIT), or `unavailable`: use the fallback.
 */
export type InodeAnswer = { inode: number; holder: number } | null | 'unavailable';

export class SockDiag {
  private child: ChildProcessWithoutNullStreams | null = null;
  /** Once the helper could not start or enter a namespace, everything is `unavailable` until this time. */
  private downUntil = 0;
  private nextId = 1;
  private buffered = '';
  private readonly waiting = new Map<number, { seq: number; settle: (a: InodeAnswer) => void }>();

  constructor(
    private readonly python = 'python3',
    private readonly retryMs = 30_000,
  ) {}

  private start(): ChildProcessWithoutNullStreams | null {
    if (this.child) return this.child;
    if (Date.now() < this.downUntil) return null;
    let child: ChildProcessWithoutNullStreams;
    try {
      child = spawn(this.python, ['-u', '-c', SOCK_DIAG_HELPER], { stdio: ['pipe', 'pipe', 'pipe'] });
    } catch {
      this.downUntil = Date.now() + this.retryMs;
      return null;
    }
    const down = (): void => {
      if (this.child !== child) return;
      this.child = null;
      this.downUntil = Date.now() + this.retryMs;
      for (const w of this.waiting.values()) w.settle('unavailable');
      this.waiting.clear();
    };
    child.on('error', down);
    child.on('exit', down);
    child.stdin.on('error', down);
    child.stderr.resume();
    child.stdout.setEncoding('latin1');
    child.stdout.on('data', (chunk: string) => this.onData(chunk));
    // An idle helper never keeps the proxy alive; a question waiting for its answer does (see held).
    child.unref();
    for (const s of [child.stdin, child.stdout, child.stderr] as Array<{ unref?: () => void }>) s.unref?.();
    this.child = child;
    return child;
  }

  private onData(chunk: string): void {
    this.buffered += chunk;
    for (let nl = this.buffered.indexOf('\n'); nl >= 0; nl = this.buffered.indexOf('\n')) {
      const [id, kind, value, holder] = this.buffered.slice(0, nl).split(' ');
      this.buffered = this.buffered.slice(nl + 1);
      const w = this.waiting.get(Number(id));
      if (!w) continue;
      this.waiting.delete(Number(id));
      this.held();
      if (kind !== 'ok') {
        // Not allowed into the namespace (EPERM), or /proc not readable: this helper cannot do the job.
        if (value === '1' || value === '13') this.downUntil = Date.now() + this.retryMs;
        w.settle(value === '2' || value === '3' ? null : 'unavailable');
        continue;
      }
      const a = parseInetDiagReply(Buffer.from(value ?? '', 'hex'), w.seq);
      if (!a) w.settle('unavailable');
      else if ('inode' in a) w.settle(a.inode > 0 ? { inode: a.inode, holder: Number(holder) || 0 } : null);
      else w.settle(a.errno === ENOENT ? null : 'unavailable');
    }
  }

  /** The helper's output keeps the event loop alive exactly while an answer is awaited. */
  private held(): void {
    const out = this.child?.stdout as { ref?: () => void; unref?: () => void } | undefined;
    if (this.waiting.size > 0) out?.ref?.();
    else out?.unref?.();
  }

  /**
   * Starts the helper and opens `pid`'s namespace socket ahead of the first question: started on the
   * first connection instead, Python's start-up (100+ ms) let a short request's socket close before
   * it was asked about.
   */
  prepare(pid: number): void {
    const child = Date.now() < this.downUntil ? null : this.start();
    child?.stdin.write(`0 ${pid} -\n`);
  }

  /** The inode of the socket `t` in the network namespace of host pid `pid`, and who holds it. Never throws. */
  inodeOf(pid: number, t: TcpTuple): Promise<InodeAnswer> {
    let req: Buffer;
    const id = (this.nextId++ % 0x7fffffff) + 1;
    try {
      req = packInetDiagRequest(t, id);
    } catch {
      return Promise.resolve('unavailable');
    }
    const child = Date.now() < this.downUntil ? null : this.start();
    if (!child) return Promise.resolve('unavailable');
    return new Promise((resolve) => {
      this.waiting.set(id, { seq: id, settle: resolve });
      this.held();
      child.stdin.write(`${id} ${pid} ${req.toString('hex')}\n`);
    });
  }

  dispose(): void {
    const c = this.child;
    this.child = null;
    for (const w of this.waiting.values()) w.settle('unavailable');
    this.waiting.clear();
    c?.kill();
  }
}
