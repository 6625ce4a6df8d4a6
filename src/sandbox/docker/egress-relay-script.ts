/**
 * The relay that runs in a sandbox's `<name>-egress` container, which shares the sandbox's network
 * namespace (`--network container:<sandbox>`): it makes the sandbox's proxy address — a listening TCP
 * socket on the sandbox's own loopback — and passes that *listening socket* (its descriptor, with
 * SCM_RIGHTS) to the app's egress helper over a Unix socket (`relay.sock`, bind-mounted), once per
 * link. From then on the proxy on this machine accepts the sandbox's connections itself, straight off
 * the sandbox's loopback: no process of ours stands between a connection and the proxy (before, each
 * connection was accepted here and handed across two more processes: most of a small request's cost
 * through the proxy, bench/network.ts).
 *
 * Nothing about enforcement moves: the sandbox's namespace still has no route out (its only network
 * is `--internal`, with no address for this machine), so the one way out is the socket the proxy
 * holds, and the proxy decides every connection that arrives on it. The relay has no capability, no
 * other network, and never reads a byte of the sandbox's.
 *
 * Fails closed: the listening socket exists only while the link does. When the link breaks (the proxy
 * or its helper died, or it stopped serving the sandbox) the relay closes its copy — the proxy's copy
 * died with it, or is closed when the proxy learns the link is gone — so the sandbox's connections are
 * refused at once rather than left in a backlog nobody accepts. Then it tries the link again every
 * RETRY_S and, once linked, makes a new listening socket and passes it.
 *
 * Python because python3 is what sandbox-desk/base has (no socat, no compiler).
 */
import { RELAY_SOCKET_NAME } from '../network/network-files.js';

export const RELAY_SOCKET_DIR = '/run/sandbox-desk-egress';
/** What the relay prints once it has passed its listener (docker-network.ts waits for it after a start). */
export const LINKED_LINE = 'relay: linked';

/** `socketDir` is the container's; tests run the same script on this machine. */
export function relayScript(port: number, socketDir = RELAY_SOCKET_DIR, host = '127.0.0.1'): string {
  return `
import array, select, socket, time
SOCK = ${JSON.stringify(`${socketDir}/${RELAY_SOCKET_NAME}`)}
ADDR = (${JSON.stringify(host)}, ${port})
RETRY_S = 0.2
said = None
def say(why):
    global said
    if why != said: print("relay:", why, flush=True)
    said = why
while True:
    u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    l = None
    try:
        u.settimeout(5)
        u.connect(SOCK)
        l = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # The proxy's copy of an earlier socket may not be closed yet: the next try binds again.
        l.bind(ADDR); l.listen(512)
        u.sendmsg([b"L"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [l.fileno()]))])
        say("linked: the proxy accepts on %s:%d" % ADDR)  # LINKED_LINE
        u.settimeout(None)
        # The helper never writes: readable means the link is gone.
        while True:
            select.select([u], [], [])
            if u.recv(64) == b"": break
        say("link gone: %s:%d refuses until it is back (fails closed)" % ADDR)
    except OSError as e:
        say("no link to the egress proxy (%s): %s:%d refuses connections (fails closed)" % (e.strerror or e, ADDR[0], ADDR[1]))
    finally:
        if l is not None: l.close()
        u.close()
    time.sleep(RETRY_S)
`;
}
