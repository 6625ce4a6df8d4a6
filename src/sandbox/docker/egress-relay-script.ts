/**
 * The relay that runs in a sandbox's `<name>-egress` container: it accepts the sandbox's TCP
 * connections on the sandbox's internal network and passes each *connection itself* — its descriptor,
 * with SCM_RIGHTS — to the app's egress helper over a Unix socket (`relay.sock`, bind-mounted), then
 * closes its own copy. The relay never carries a byte: the proxy on this machine reads the request
 * straight off the sandbox's socket and, once it has decided, pipes or splices the sandbox's socket to
 * the destination's (egress-proxy.ts, splice-pump.ts). Before, every byte crossed the relay and a Unix
 * socket, two hops in user space that cost half the throughput of `open` (bench/network.ts).
 *
 * Nothing about enforcement moves: the relay still has no route but the internal network, the sandbox
 * reaches nothing but the relay, and a passed socket stays what it was — a connection from the sandbox
 * to the relay's address, which nobody can turn into another destination. The proxy learns the
 * sandbox-side address and port from the socket itself (getpeername), so there is no line to forge.
 *
 * Python because python3 is what sandbox-desk/base has (no socat, no compiler). One blocking loop: the
 * work per connection is one accept and one sendmsg. The link to the helper is kept open and made again
 * when it breaks (the helper restarted); when it cannot be made the connection is closed at once — no
 * helper, no network (fails closed). A send that does not finish in SEND_TIMEOUT_S counts as broken:
 * a stuck helper must not hold the sandbox's connections in the listen backlog.
 */
import { RELAY_SOCKET_NAME } from '../network/network-files.js';

export const RELAY_SOCKET_DIR = '/run/sandbox-desk-egress';

/** `socketDir` and `host` are the container's; tests run the same script on this machine. */
export function relayScript(port: number, socketDir = RELAY_SOCKET_DIR, host = '0.0.0.0'): string {
  return `
import array, select, socket
SOCK = ${JSON.stringify(`${socketDir}/${RELAY_SOCKET_NAME}`)}
SEND_TIMEOUT_S = 5
link = [None]
def drop():
    if link[0] is not None:
        try: link[0].close()
        except OSError: pass
    link[0] = None
def connect():
    if link[0] is None:
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        u.settimeout(SEND_TIMEOUT_S)
        try: u.connect(SOCK)
        except OSError:
            u.close(); raise
        link[0] = u
    return link[0]
def hand_over(c):
    # Twice: a link that broke since the last connection is made again once.
    for _ in range(2):
        try:
            connect().sendmsg([b"C"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [c.fileno()]))])
            return True
        except OSError:
            drop()
    return False
l = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((${JSON.stringify(host)}, ${port})); l.listen(512)
while True:
    watch = [l] if link[0] is None else [l, link[0]]
    ready, _, _ = select.select(watch, [], [])
    if link[0] is not None and link[0] in ready:
        # The helper never writes: readable means it went away.
        try: gone = link[0].recv(64) == b""
        except OSError: gone = True
        if gone: drop()
    if l in ready:
        try: c, _ = l.accept()
        except OSError: continue
        try:
            # Kept by the socket wherever it goes: the proxy's small answers are not held back by Nagle.
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if not hand_over(c): print("relay: no egress helper: connection closed (fails closed)", flush=True)
        finally:
            c.close()
`;
}
