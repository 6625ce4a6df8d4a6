# The desktop browser's DevTools, reachable only through a 0600 Unix socket of the desktop's own user.
#   python3 cdp-pipe.py SOCKET -- chromium ARGS...
# Chromium runs with --remote-debugging-pipe: it reads NUL-delimited JSON on fd 3 and writes on fd 4, and
# opens no TCP port, so nothing in the sandbox's network namespace (the agent's shell included) can
# drive it. This relay is Chromium's parent and holds both pipe ends for Chromium's whole life: Chromium
# treats EOF on its pipe as "close the browser", so clients come and go without the browser noticing.
#
# Each client (the app, one per CDP WebSocket) gets a browser session of its own
# (Target.attachToBrowserTarget): its root-level messages are sent on that session and answers come back
# stripped of it, so clients never see each other's ids, and a client's auto-attach settings
# (Playwright's waitForDebuggerOnStart) die with its session when it disconnects, instead of leaving
# new tabs paused. Messages for the child sessions a client attached are routed to that client.
import errno, fcntl, json, os, select, signal, socket, sys

sock_path = sys.argv[1]
argv = sys.argv[3:] if len(sys.argv) > 2 and sys.argv[2] == '--' else sys.argv[2:]

to_browser_r, to_browser_w = os.pipe()
from_browser_r, from_browser_w = os.pipe()
pid = os.fork()
if pid == 0:
    # fds 3 and 4 exactly; move the pipe ends out of the way first so dup2 cannot clobber them.
    a = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
    b = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
    os.dup2(a, 3)
    os.dup2(b, 4)
    os.closerange(5, 4096)
    os.execvp(argv[0], argv)
os.close(to_browser_r)
os.close(from_browser_w)


def stop(*_):
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        pass
    try:
        os.unlink(sock_path)
    except OSError:
        pass
    os._exit(0)


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGHUP, stop)

try:
    os.unlink(sock_path)
except OSError:
    pass
old = os.umask(0o077)
server = socket.socket(socket.AF_UNIX)
server.bind(sock_path)
os.umask(old)
os.chmod(sock_path, 0o600)
server.listen(16)


def to_browser(msg):
    data = json.dumps(msg, separators=(',', ':')).encode() + b'\0'
    while data:
        data = data[os.write(to_browser_w, data):]


class Client:
    def __init__(self, sock):
        self.sock = sock
        self.buf = b''
        self.session = None  # its browser session, once attached
        self.queued = []  # messages sent before that
        self.owned = set()  # child sessions it attached


clients = {}  # socket -> Client
owners = {}  # session id -> Client
pending = {}  # relay's own request id -> Client waiting for its browser session
next_id = [1 << 30]


def own(client, session):
    client.owned.add(session)
    owners[session] = client


def send(client, msg):
    try:
        client.sock.sendall(json.dumps(msg, separators=(',', ':')).encode() + b'\0')
    except OSError:
        drop(client)


def drop(client):
    if client.sock not in clients:
        return
    del clients[client.sock]
    client.sock.close()
    for s in client.owned:
        owners.pop(s, None)
    if client.session:
        # Its auto-attach settings and child sessions end with it.
        next_id[0] += 1
        to_browser({'id': next_id[0], 'method': 'Target.detachFromTarget', 'params': {'sessionId': client.session}})


def from_client(client, msg):
    if not isinstance(msg, dict):
        return
    if client.session is None:
        client.queued.append(msg)
        return
    if not msg.get('sessionId'):
        msg['sessionId'] = client.session
    elif owners.get(msg['sessionId']) is not client:
        send(client, {'id': msg.get('id'), 'error': {'code': -32001, 'message': 'Session with given id not found.'}})
        return
    to_browser(msg)


def from_browser(msg):
    session = msg.get('sessionId')
    if not session:
        client = pending.pop(msg.get('id'), None)
        if client and client.sock in clients:
            result = msg.get('result') or {}
            if 'sessionId' not in result:
                send(client, {'method': 'Relay.error', 'params': msg.get('error')})
                drop(client)
                return
            client.session = result['sessionId']
            own(client, client.session)
            for m in client.queued:
                from_client(client, m)
            client.queued = []
        return
    client = owners.get(session)
    if client is None:
        return
    if msg.get('method') == 'Target.attachedToTarget':
        own(client, msg['params']['sessionId'])
    elif msg.get('method') == 'Target.detachedFromTarget':
        gone = msg['params'].get('sessionId')
        client.owned.discard(gone)
        owners.pop(gone, None)
    elif isinstance(msg.get('result'), dict) and isinstance(msg['result'].get('sessionId'), str):
        own(client, msg['result']['sessionId'])
    if session == client.session:
        del msg['sessionId']
    send(client, msg)


def frames(buf, data):
    buf += data
    *whole, rest = buf.split(b'\0')
    out = []
    for w in whole:
        try:
            out.append(json.loads(w))
        except ValueError:
            pass
    return rest, out


browser_buf = b''
while True:
    try:
        ready, _, _ = select.select([server, from_browser_r, *clients], [], [])
    except InterruptedError:
        continue
    if from_browser_r in ready:
        data = os.read(from_browser_r, 1 << 20)
        if not data:
            break  # the browser exited
        browser_buf, msgs = frames(browser_buf, data)
        for m in msgs:
            if isinstance(m, dict):
                from_browser(m)
    if server in ready:
        sock, _ = server.accept()
        client = Client(sock)
        clients[sock] = client
        next_id[0] += 1
        pending[next_id[0]] = client
        to_browser({'id': next_id[0], 'method': 'Target.attachToBrowserTarget'})
    for sock in [s for s in ready if s in clients]:
        client = clients[sock]
        try:
            data = sock.recv(1 << 20)
        except OSError as e:
            data = b'' if e.errno != errno.EAGAIN else None
        if data is None:
            continue
        if not data:
            drop(client)
            continue
        client.buf, msgs = frames(client.buf, data)
        for m in msgs:
            from_client(client, m)
stop()
