/**
 * The relay that runs in a sandbox's `<name>-egress` container: TCP on the sandbox's internal network →
 * the app's egress proxy on a Unix socket (bind-mounted). Python because python3 is what
 * sandbox-desk/base has (no socat, no compiler); written so that Python is not on the data path:
 *
 * - splice(2) through a pipe moves the bytes socket → pipe → socket inside the kernel (no copy to user
 *   space), with recv/send as the fallback where splice is refused; never SPLICE_F_MORE (it corks the
 *   TCP side: a small response then waited for the connection's end);
 * - one thread, one epoll loop (selectors), non-blocking sockets: no thread or process is started per
 *   connection — on a loaded machine every extra thread to schedule was milliseconds per request;
 * - TCP_NODELAY on the sandbox side (Nagle against the client's delayed ACK); a listen backlog of 512.
 *
 * Before the first byte it writes one PROXY protocol v1 line (`PROXY TCP4 src dst sport dport\r\n`) to the
 * proxy: the sandbox-side address and source port, which the proxy maps to the process that connected
 * (process-of-connection.ts). The sandbox cannot forge it: the relay writes it before any of its bytes.
 *
 * Half-close passes through one way: the client's EOF becomes a write shutdown toward the proxy (the
 * answer still comes back); the proxy's EOF ends the connection.
 */
export const RELAY_SOCKET_DIR = '/run/sandbox-desk-egress';

export function relayScript(port: number): string {
  return `
import os, socket, selectors, fcntl, errno
SOCK = "${RELAY_SOCKET_DIR}/proxy.sock"
CHUNK = 1 << 20
NB = os.SPLICE_F_MOVE | os.SPLICE_F_NONBLOCK
sel = selectors.DefaultSelector()
use_splice = [True]
class Way:
    # One direction of a connection: src -> dst, through a pipe (splice) or a buffer (fallback).
    def __init__(self, conn, src, dst, up):
        self.conn, self.src, self.dst, self.up = conn, src, dst, up
        self.held, self.buf, self.eof, self.r, self.w = 0, b"", False, None, None
        if use_splice[0]:
            self.r, self.w = os.pipe2(os.O_NONBLOCK)
            try: fcntl.fcntl(self.w, 1031, CHUNK)
            except OSError: pass
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
                if self.r is not None:
                    try: n = os.splice(self.src.fileno(), self.w, CHUNK, flags=NB)
                    except OSError as e:
                        if e.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP): raise
                        use_splice[0] = False; os.close(self.r); os.close(self.w); self.r = self.w = None; continue
                    if n == 0: self.eof = True
                    else: self.held = n
                else:
                    d = self.src.recv(CHUNK)
                    if not d: self.eof = True
                    else: self.buf = d
            except BlockingIOError: return self.conn.want(self.src, selectors.EVENT_READ, self)
    def close(self):
        for f in (self.r, self.w):
            if f is not None: os.close(f)
        self.r = self.w = None
class Conn:
    def __init__(self, c, u):
        self.c, self.u, self.done = c, u, False
        self.ways = [Way(self, c, u, True), Way(self, u, c, False)]
        self.wants = {c: {}, u: {}}
    def want(self, s, ev, way):
        if self.done: return
        w = self.wants[s]; w[ev] = way
        mask = 0
        for e in w: mask |= e
        try: sel.modify(s, mask, self)
        except KeyError: sel.register(s, mask, self)
    def fire(self, s, mask):
        # An earlier event of the same batch may have closed this connection.
        if self.done: return
        w = self.wants[s]
        ways = [w.pop(e) for e in (selectors.EVENT_READ, selectors.EVENT_WRITE) if mask & e and e in w]
        left = 0
        for e in w: left |= e
        if left: sel.modify(s, left, self)
        else: sel.unregister(s)
        for way in ways:
            if self.done: return
            try: way.pump()
            except OSError: return self.close()
    def ended(self, way):
        # The client's EOF: a write shutdown toward the proxy (its answer still comes). The proxy's: the end.
        if way.up:
            try: self.u.shutdown(socket.SHUT_WR)
            except OSError: pass
        else: self.close()
    def close(self):
        if self.done: return
        self.done = True
        for s in (self.c, self.u):
            try: sel.unregister(s)
            except (KeyError, ValueError): pass
            try: s.close()
            except OSError: pass
        for w in self.ways: w.close()
def accept(l):
    while True:
        try: c, addr = l.accept()
        except BlockingIOError: return
        except OSError: return
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            u.connect(SOCK)
            me = c.getsockname()
            u.sendall(("PROXY TCP4 %s %s %d %d\\r\\n" % (addr[0], me[0], addr[1], me[1])).encode())
            c.setblocking(False); u.setblocking(False)
            conn = Conn(c, u)
        except OSError:
            # No proxy: the connection ends here (fails closed).
            c.close(); u.close(); continue
        for way in conn.ways:
            if conn.done: break
            try: way.pump()
            except OSError: conn.close()
l = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("0.0.0.0", ${port})); l.listen(512); l.setblocking(False)
sel.register(l, selectors.EVENT_READ, None)
while True:
    for key, mask in sel.select():
        # Nothing one connection does may stop the loop (every other connection is in it): its error ends it alone.
        try:
            if key.data is None: accept(l)
            else: key.data.fire(key.fileobj, mask)
        except Exception as e:
            print("relay: connection failed:", repr(e), flush=True)
            if key.data is not None: key.data.close()
`;
}
