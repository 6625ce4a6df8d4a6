/**
 * The egress proxy's helper process on this machine, for the two things Node cannot do: take a
 * descriptor off an arbitrary Unix socket, and move bytes in the kernel.
 *
 * 1. **Sandbox connections.** A docker sandbox's relay (egress-relay-script.ts), in the sandbox's
 *    network namespace, passes the listening socket of the sandbox's proxy address (SCM_RIGHTS) over
 *    its link to `relay.sock`; the proxy gives that link to the helper (`adopt`), the helper passes the
 *    listener on to Node as a net.Server, and the proxy accepts the sandbox's connections on it itself
 *    (`onRelayed`): no process between a sandbox connection and the proxy. When a link ends, the helper
 *    says so and its listener is closed (the relay closes its copy: the address refuses, fails closed).
 * 2. **Bulk bytes.** Once a connection has shown it is a bulk transfer (egress-proxy.ts hands it over
 *    after HANDOFF_BYTES), both of its sockets — the sandbox's and the destination's, both TCP — come
 *    here and the helper moves the rest of their bytes with splice(2). Measured (bench/network.ts):
 *    Node's pipe() cost about 1.5 ms of its CPU per MiB, most of the proxy's 2 cores' share.
 *
 * Nothing about enforcement moves: the proxy has already read the policy, decided, logged the
 * connection and (for TLS) checked the SNI before it hands over two sockets that are already
 * connected to where they were allowed to be; the helper cannot open anything, and like the proxy it
 * runs on this machine, out of the sandbox's reach.
 *
 * How descriptors cross to and from Node: Node's own child IPC channel (`child.send(message, socket)`),
 * which passes them with SCM_RIGHTS. The helper is Python (stdlib only, like the relay; no maintained
 * package speaks Node's channel), so it speaks the channel's side a Node child would: JSON lines, a
 * descriptor arriving with each `NODE_HANDLE` message, which it must answer `NODE_HANDLE_ACK` (Node
 * sends no further handle until then, and closes its own copy on it), `NODE_SOCKET_NOTIFY_CLOSE` →
 * `NODE_SOCKET_ALL_CLOSED` (a net.Server that has passed a socket asks that on close()), and a
 * `NODE_HANDLE` of its own (type net.Server) for each listener a relay passes.
 *
 * Where python3 cannot start, `take` says no and the proxy keeps piping bulk bytes itself; relayed
 * sandboxes then have no network at all (fails closed), and the proxy's log says why.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';

export const SPLICE_PUMP_SCRIPT = String.raw`
import array, base64, errno, fcntl, json, os, selectors, socket
CHUNK = 1 << 20
NB = os.SPLICE_F_MOVE | os.SPLICE_F_NONBLOCK
sel = selectors.DefaultSelector()
ch = socket.socket(fileno=int(os.environ["NODE_CHANNEL_FD"]))
ch.setblocking(False)
fds = []    # descriptors received, in order: each belongs to the next NODE_HANDLE line
inbuf = [b""]
out = []     # [bytes, descriptor or None] in order: a descriptor goes with the first byte of its line
halves = {} # connection id -> the half that came first
live = set()
def say(obj, fd=None):
    out.append([(json.dumps(obj) + "\n").encode(), fd])
    flush()
def flush():
    while out:
        data, fd = out[0]
        try:
            if fd is None: n = ch.send(data)
            else: n = ch.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
        except BlockingIOError: break
        if fd is not None: os.close(fd); out[0][1] = None
        if n < len(data): out[0][0] = data[n:]
        else: out.pop(0)
    sel.modify(ch, selectors.EVENT_READ | (selectors.EVENT_WRITE if out else 0), None)
class Relay:
    # A sandbox's relay link (egress-relay-script.ts): the descriptor it passes is the listening socket
    # of the sandbox's proxy address, given to the proxy as a net.Server the way Node's own channel
    # passes one. The link's end is said too: the proxy then closes that listener (fails closed).
    def __init__(self, s, sandbox, link):
        self.s, self.sandbox, self.link = s, sandbox, link
        relays.add(self)
        sel.register(s, selectors.EVENT_READ, self)
    def fire(self, s, mask):
        while True:
            try: data, anc, _, _ = s.recvmsg(64, socket.CMSG_SPACE(16 * 4))
            except BlockingIOError: return
            except OSError: return self.close()
            for level, kind, d in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    a = array.array("i"); a.frombytes(d[: len(d) - len(d) % a.itemsize])
                    for fd in a:
                        # Only a listening TCP socket is passed on: the relay is ours, but it runs in the
                        # sandbox's namespace, and the proxy must get what it expects or nothing.
                        try:
                            t = socket.socket(fileno=os.dup(fd))
                            ok = t.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 1 and t.family == socket.AF_INET and t.type == socket.SOCK_STREAM
                            t.close()
                        except OSError: ok = False
                        if ok: say({"cmd": "NODE_HANDLE", "type": "net.Server", "msg": {"egress": self.sandbox, "link": self.link}}, fd)
                        else: os.close(fd)
            if not data: return self.close()
    def close(self):
        if self not in relays: return
        relays.discard(self)
        try: sel.unregister(self.s)
        except (KeyError, ValueError): pass
        self.s.close()
        say({"gone": self.link})
relays = set()
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
    if "relay" in msg: return Relay(s, msg["relay"], msg.get("link"))
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
    elif "drop" in m:
        # The proxy stopped serving a sandbox: its relays' links end (they fail closed from then on).
        for r in [r for r in relays if r.sandbox == m["drop"]]: r.close()
        return
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
  /** After the pump could not start or died, it is not started again until then (bulk stays on the proxy). */
  private downUntil = 0;
  /** Relay links that arrived before the pump said it runs: passed on when it does, closed if it cannot start. */
  private waiting: Array<{ sandbox: string; relay: net.Socket }> = [];
  /** Where the sandbox connections arrive, accepted on the listeners the relays pass (the proxy sets it). */
  onRelayed: ((sandbox: string, client: net.Socket) => void) | null = null;
  /** Relay links given to the pump and not yet gone, by id: their sandbox and, once passed, its listener (closed with the link). */
  private readonly links = new Map<number, { sandbox: string; server: net.Server | null }>();
  private nextLink = 1;

  constructor(
    private readonly python = 'python3',
    /** Short: while the pump is down, relayed sandboxes have no network (they fail closed). */
    private readonly retryMs = 2_000,
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
      for (const w of this.waiting.splice(0)) w.relay.destroy();
      // The links died with the pump: their relays close their copies and link again (fails closed).
      this.forgetLinks(() => true);
    };
    child.on('error', down);
    child.on('exit', down);
    child.on('disconnect', down);
    child.on('message', (m: { pump?: string; egress?: string; link?: number; gone?: number }, handle?: unknown) => {
      if (this.child !== child) {
        if (handle instanceof net.Server) handle.close();
        return;
      }
      if (m?.pump === 'ready') {
        this.up = true;
        for (const w of this.waiting.splice(0)) this.adopt(w.sandbox, w.relay);
      } else if (typeof m?.egress === 'string' && typeof m.link === 'number' && handle instanceof net.Server) {
        this.listening(m.egress, m.link, handle);
      } else if (typeof m?.gone === 'number') {
        this.forgetLinks((link) => link === m.gone);
      }
    });
    child.stderr?.resume();
    // The pump never keeps the proxy alive.
    child.unref();
    child.channel?.unref();
    (child.stderr as { unref?: () => void } | null)?.unref?.();
    this.child = child;
    return child;
  }

  /**
   * A relay passed its sandbox's listening socket: the proxy accepts the sandbox's connections on it
   * from now on, with no process between. A link already gone (or a sandbox dropped meanwhile) gets none.
   */
  private listening(sandbox: string, link: number, server: net.Server): void {
    const l = this.links.get(link);
    if (!l || l.sandbox !== sandbox || !this.onRelayed) return void server.close();
    l.server?.close();
    l.server = server;
    // Each socket is set up by the proxy (half-open, no Nagle: EgressProxy.relayed).
    server.on('connection', (c: net.Socket) => {
      if (this.onRelayed) this.onRelayed(sandbox, c);
      else c.destroy();
    });
    server.on('error', () => undefined);
  }

  /** Forgets the links `which` names and closes their listeners. */
  private forgetLinks(which: (link: number, sandbox: string) => boolean): void {
    for (const [link, l] of this.links) {
      if (!which(link, l.sandbox)) continue;
      this.links.delete(link);
      l.server?.close();
    }
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

  /**
   * Gives the pump a sandbox relay's link (a connection to `relay.sock`, never read here: a byte read
   * by Node would lose the descriptor that came with it). Every sandbox connection the relay passes
   * then arrives at `onRelayed`. false: the pump cannot run, the link was closed (the relay fails closed).
   */
  adopt(sandbox: string, relay: net.Socket): boolean {
    const c = this.start();
    if (!c) {
      relay.destroy();
      return false;
    }
    if (!this.up || !c.connected) {
      this.waiting.push({ sandbox, relay });
      return true;
    }
    const link = this.nextLink++;
    this.links.set(link, { sandbox, server: null });
    c.send({ relay: sandbox, link }, relay);
    return true;
  }

  /** The proxy no longer serves `sandbox`: the pump closes its relays' links. */
  drop(sandbox: string): void {
    for (const w of this.waiting.filter((x) => x.sandbox === sandbox)) w.relay.destroy();
    this.waiting = this.waiting.filter((x) => x.sandbox !== sandbox);
    this.forgetLinks((_link, s) => s === sandbox);
    if (this.up && this.child?.connected) this.child.send({ drop: sandbox });
  }

  dispose(): void {
    for (const w of this.waiting.splice(0)) w.relay.destroy();
    this.forgetLinks(() => true);
    const c = this.child;
    this.child = null;
    this.up = false;
    c?.kill();
  }
}
