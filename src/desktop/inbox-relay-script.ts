/**
 * The relay the desktop's screen stream runs inside the sandbox when the sandbox has an inbox
 * (inbox.ts): started through execPrefix as the desktop's account, it connects to the desktop's Unix
 * socket, then to the app's inbox socket, hands the app its token, and from then on moves bytes
 * between the two sockets — so the bytes never pass through the exec's stdio (docker CLI, dockerd, shim).
 *
 * - The token comes on stdin, never in argv: /proc/<pid>/cmdline is readable by every account in the
 *   sandbox, and a stolen token would let the agent's shell pose as the desktop to the app.
 * - Bytes move with splice(2) through a pipe (kernel to kernel, no copy into Python), recv/send where
 *   splice is refused or missing (Python < 3.10). One blocking thread per direction: each waits in the
 *   kernel, so nothing polls and Python runs only once per chunk (as egress-relay-script.ts, without its
 *   event loop: there is one connection here, not many).
 * - It exits when stdin reaches EOF (the exec was killed: killing the docker CLI does not kill this
 *   process) and when either socket closes; os._exit, so no thread keeps it alive.
 * - Exit codes the app reads before the connection is made: 2 the inbox could not be reached (the app
 *   falls back to the stdio relay), 3 the desktop's socket could not (the desktop is gone), 4 bad token.
 *
 * stdlib only: python3 is in every desktop image (the launcher's DevTools relay needs it too).
 */
export const INBOX_RELAY = `
import os, sys, socket, threading, errno
inbox, target = sys.argv[1], sys.argv[2]
line = b""
while not line.endswith(b"\\n"):
    d = os.read(0, 64)
    if not d: os._exit(0)
    line += d
    if len(line) > 64: os._exit(4)
try:
    t = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); t.connect(target)
except OSError as e:
    sys.stderr.write("cannot connect to %s: %s\\n" % (target, e)); sys.stderr.flush(); os._exit(3)
try:
    h = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); h.connect(inbox); h.sendall(line)
except OSError as e:
    sys.stderr.write("cannot connect to the inbox %s: %s\\n" % (inbox, e)); sys.stderr.flush(); os._exit(2)
CHUNK = 1 << 20
def copy(src, dst):
    while True:
        d = src.recv(CHUNK)
        if not d: return
        dst.sendall(d)
def pump(src, dst):
    try:
        if not hasattr(os, "splice"): return copy(src, dst)
        r, w = os.pipe()
        try:
            import fcntl; fcntl.fcntl(w, 1031, CHUNK)  # F_SETPIPE_SZ: fewer, larger moves
        except (OSError, ImportError): pass
        s, o = src.fileno(), dst.fileno()
        while True:
            try: n = os.splice(s, w, CHUNK)
            except OSError as e:
                if e.errno in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP): return copy(src, dst)
                raise
            if n == 0: return
            while n: n -= os.splice(r, o, n)
    except OSError: pass
    finally: os._exit(0)
for a, b in ((t, h), (h, t)):
    threading.Thread(target=pump, args=(a, b), daemon=True).start()
while True:
    try:
        if not os.read(0, 4096): break
    except OSError: break
os._exit(0)
`;
