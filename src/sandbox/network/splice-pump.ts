/**
 * Takes the bulk bytes of allowed connections off Node: once a connection has shown it is a bulk
 * transfer (egress-proxy.ts hands it over after HANDOFF_BYTES), both of its sockets — the relay's
 * Unix socket and the destination's TCP socket — go to this pump, a host-side process that moves the
 * bytes with splice(2) in the kernel. Measured (bench/network.ts): Node's pipe() cost about 1.5 ms of
 * its CPU per MiB, most of the proxy's 2 cores' share, and capped a download at a third of `open`.
 *
 * Nothing about enforcement moves: the proxy has already read the policy, decided, logged the
 * connection and (for TLS) checked the SNI before it hands over two sockets that are already
 * connected to where they were allowed to be; the pump cannot open anything, and like the proxy it
 * runs on this machine, out of the sandbox's reach.
 *
 * How the sockets get there: Node's own child IPC channel (`child.send(message, socket)`), which
 * passes the descriptor with SCM_RIGHTS. The receiver is Python (stdlib only, like the relay:
 * egress-relay-script.ts; no maintained package speaks Node's channel), so it speaks the channel's
 * side a Node child would: JSON lines, a descriptor arriving with each `NODE_HANDLE` message, which
 * it must answer `NODE_HANDLE_ACK` (Node sends no further handle until then, and closes its own copy
 * on it), and `NODE_SOCKET_NOTIFY_CLOSE` → `NODE_SOCKET_ALL_CLOSED` (a net.Server that has passed a
 * socket asks that on close()).
 *
 * Where python3 cannot start, `take` says no and the proxy keeps piping the bytes itself, as before.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type net from 'node:net';

export const SPLICE_PUMP_SCRIPT = String.raw`
import array, base64, errno, fcntl, json, os, selectors, socket
CHUNK = 1 << 20
NB = os.SPLICE_F_MOVE | os.SPLICE_F_NONBLOCK
sel = selectors.DefaultSelector()
ch = socket.socket(fileno=int(os.environ["NODE_CHANNEL_FD"]))
ch.setblocking(False)
fds = []    # descriptors received, in order: each belongs to the next NODE_HANDLE line
inbuf = [b""]
outbuf = [b""]
halves = {} # connection id -> the half that came first
live = set()
def say(obj):
    outbuf[0] += (json.dumps(obj) + "\n").encode()
    flush()
def flush():
    while outbuf[0]:
        try: n = ch.send(outbuf[0])
        except BlockingIOError: break
        outbuf[0] = outbuf[0][n:]
    sel.modify(ch, selectors.EVENT_READ | (selectors.EVENT_WRITE if outbuf[0] else 0), None)
class Way:
    # One direction, src -> dst: what Node had already read for dst first (buf), then splice through a pipe.
    def __init__(self, conn, src, dst, pending):
        self.conn, self.src, self.dst = conn, src, dst
        self.held, self.buf, self.eof, self.done = 0, pending, False, False
        self.r, self.w = os.pipe2(os.O_NONBLOCK)
        try: fcntl.fcntl(self.w, 1031, CHUNK)  # F_SETPIPE_SZ
        except OSError: pass
        self.spliced = True
    def pump(self):
        while True:
            if self.held:
                try: n = os.splice(self.r, self.dst.fileno(), self.held, flags=NB)
                except BlockingIOError: return self.conn.want(self.dst, selectors.EVENT_WRITE, self)
                self.held -= n; continue
            if self.buf:
                try: n = self.dst.send(self.buf)
                except BlockingIOError: return self.conn.want(self.dst, selectors.EVENT_WRITE, self)
                self.buf = self.buf[n:]; continue
            if self.eof: return self.conn.ended(self)
            try:
                if self.spliced:
                    try: n = os.splice(self.src.fileno(), self.w, CHUNK, flags=NB)
                    except OSError as e:
                        if e.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP): raise
                        self.spliced = False; continue
                    if n == 0: self.eof = True
                    else: self.held = n
                else:
                    d = self.src.recv(CHUNK)
                    if not d: self.eof = True
                    else: self.buf = d
            except BlockingIOError: return self.conn.want(self.src, selectors.EVENT_READ, self)
    def close(self):
        for f in (self.r, self.w): os.close(f)
class Conn:
    def __init__(self, c, u, to_c, to_u):
        self.c, self.u, self.closed = c, u, False
        self.wants = {c: {}, u: {}}
        self.ways = [Way(self, c, u, to_u), Way(self, u, c, to_c)]
        live.add(self)
        for w in self.ways:
            if self.closed: break
            try: w.pump()
            except OSError: self.close()
    def want(self, s, ev, way):
        if self.closed: return
        w = self.wants[s]; w[ev] = way
        mask = 0
        for e in w: mask |= e
        try: sel.modify(s, mask, self)
        except KeyError: sel.register(s, mask, self)
    def fire(self, s, mask):
        if self.closed: return
        w = self.wants[s]
        ways = [w.pop(e) for e in (selectors.EVENT_READ, selectors.EVENT_WRITE) if mask & e and e in w]
        left = 0
        for e in w: left |= e
        if left: sel.modify(s, left, self)
        else: sel.unregister(s)
        for way in ways:
            if self.closed: return
            try: way.pump()
            except OSError: return self.close()
    def ended(self, way):
        # One side's EOF passes on as a write shutdown; when both have ended, the connection has.
        way.done = True
        try: way.dst.shutdown(socket.SHUT_WR)
        except OSError: pass
        if all(w.done for w in self.ways): self.close()
    def close(self):
        if self.closed: return
        self.closed = True
        live.discard(self)
        for s in (self.c, self.u):
            try: sel.unregister(s)
            except (KeyError, ValueError): pass
            try: s.close()
            except OSError: pass
        for w in self.ways: w.close()
def take(fd, msg):
    s = socket.socket(fileno=fd)
    s.setblocking(False)
    key = msg.get("id")
    pending = base64.b64decode(msg.get("pending", ""))
    other = halves.pop(key, None)
    if other is None:
        halves[key] = (msg.get("side"), s, pending); return
    if msg.get("side") == "client": c, to_c, u, to_u = s, pending, other[1], other[2]
    else: c, to_c, u, to_u = other[1], other[2], s, pending
    Conn(c, u, to_c, to_u)
def on_line(line):
    m = json.loads(line)
    cmd = m.get("cmd")
    reply = {}
    if cmd == "NODE_HANDLE":
        if not fds: return say({"cmd": "NODE_HANDLE_NACK"})
        fd = fds.pop(0)
        say({"cmd": "NODE_HANDLE_ACK"})
        take(fd, m.get("msg") or {})
        return
    if cmd == "NODE_SOCKET_NOTIFY_CLOSE": reply = {"cmd": "NODE_SOCKET_ALL_CLOSED"}
    elif cmd == "NODE_SOCKET_GET_COUNT": reply = {"cmd": "NODE_SOCKET_COUNT", "count": len(live)}
    else: return
    if "key" in m: reply["key"] = m["key"]
    say(reply)
def on_channel():
    while True:
        try: data, anc, _, _ = ch.recvmsg(65536, socket.CMSG_SPACE(64 * 4))
        except BlockingIOError: return
        for level, kind, d in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                a = array.array("i"); a.frombytes(d[: len(d) - len(d) % a.itemsize]); fds.extend(a)
        # The proxy gone: so are the connections it handed over.
        if not data: os._exit(0)
        inbuf[0] += data
        while b"\n" in inbuf[0]:
            line, inbuf[0] = inbuf[0].split(b"\n", 1)
            if line.strip(): on_line(line)
sel.register(ch, selectors.EVENT_READ, None)
say({"pump": "ready"})
while True:
    for key, mask in sel.select():
        # One connection's failure ends that connection alone; the loop carries every other one.
        try:
            if key.data is None:
                if mask & selectors.EVENT_READ: on_channel()
                if mask & selectors.EVENT_WRITE: flush()
            else: key.data.fire(key.fileobj, mask)
        except Exception as e:
            print("pump: connection failed:", repr(e), flush=True)
            if key.data is not None: key.data.close()
`;

export class SplicePump {
  private child: ChildProcess | null = null;
  /** The pump has said it runs: before that a spawned channel looks connected even when python3 does not exist. */
  private up = false;
  private nextId = 1;
  /** Connections handed over so far (tests, the daemon's log). */
  taken = 0;
  /** After the pump could not start or died, the proxy pipes by itself until then. */
  private downUntil = 0;

  constructor(
    private readonly python = 'python3',
    private readonly retryMs = 30_000,
  ) {}

  private start(): ChildProcess | null {
    if (this.child) return this.child;
    if (Date.now() < this.downUntil) return null;
    let child: ChildProcess;
    try {
      child = spawn(this.python, ['-u', '-c', SPLICE_PUMP_SCRIPT], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'], serialization: 'json' });
    } catch {
      this.downUntil = Date.now() + this.retryMs;
      return null;
    }
    const down = (): void => {
      if (this.child !== child) return;
      this.child = null;
      this.up = false;
      this.downUntil = Date.now() + this.retryMs;
    };
    child.on('error', down);
    child.on('exit', down);
    child.on('disconnect', down);
    child.on('message', (m: { pump?: string }) => {
      if (m?.pump === 'ready' && this.child === child) this.up = true;
    });
    child.stderr?.resume();
    // The pump never keeps the proxy alive.
    child.unref();
    child.channel?.unref();
    (child.stderr as { unref?: () => void } | null)?.unref?.();
    this.child = child;
    return child;
  }

  /** Starts the pump ahead of the first bulk connection (Python's start-up is 100+ ms). */
  prepare(): void {
    this.start();
  }

  /** Whether `take` would be accepted now: the pump runs (its channel is connected). */
  ready(): boolean {
    return this.up && this.child?.connected === true;
  }

  /**
   * Hands over an allowed connection: `toClient` / `toUpstream` are what the proxy had already read
   * and not yet written, written first. The sockets must not be reading (see egress-proxy.ts); Node
   * closes its copies once the pump has acknowledged them. false: not taken, keep piping.
   */
  take(client: net.Socket, upstream: net.Socket, toClient: Buffer, toUpstream: Buffer): boolean {
    const c = this.child;
    if (!this.up || !c?.connected) return false;
    const id = this.nextId++;
    this.taken++;
    c.send({ id, side: 'client', pending: toClient.toString('base64') }, client);
    c.send({ id, side: 'upstream', pending: toUpstream.toString('base64') }, upstream);
    return true;
  }

  dispose(): void {
    const c = this.child;
    this.child = null;
    this.up = false;
    c?.kill();
  }
}
