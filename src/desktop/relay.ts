import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { remoteArgv } from '../exec/remote-argv.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';

/**
 * A byte relay *inside* the sandbox, between the exec stream's stdin/stdout and a local endpoint there
 * (the desktop's Unix socket, or a loopback TCP port). socat when the image has it, else python3.
 * socat's 8 KiB default buffer would cut a 3 MB frame into ~400 reads per hop; 64 KiB matches the pipes.
 */
const PY_RELAY = `
import os, socket, sys, select
kind, where = sys.argv[1], sys.argv[2]
if kind == 'unix':
    s = socket.socket(socket.AF_UNIX); s.connect(where)
else:
    host, port = where.rsplit(':', 1); s = socket.create_connection((host, int(port)))
i = sys.stdin.fileno()
watch = [i, s]
def out(d):
    while d:
        d = d[os.write(1, d):]
while True:
    r, _, _ = select.select(watch, [], [])
    if i in r:
        d = os.read(i, 65536)
        if d: s.sendall(d)
        else: s.shutdown(socket.SHUT_WR); watch.remove(i)
    if s in r:
        d = s.recv(65536)
        if not d: break
        out(d)
`;

const RELAY = `
# A socket that is about to appear (a restored desktop's, while its folder moves): waited for up to $4 s.
if [ "$1" = unix ] && [ "\${4:-0}" != 0 ]; then
  for ((i = 0; i < $4 * 20; i++)); do [ -S "$2" ] && break; sleep 0.05; done
fi
if command -v socat >/dev/null 2>&1; then
  if [ "$1" = unix ]; then exec socat -b 65536 STDIO "UNIX-CONNECT:$2"; else exec socat -b 65536 STDIO "TCP:$2"; fi
fi
exec python3 -c "$3" "$1" "$2"
`;

/** `waitS`: how long the relay waits in the sandbox for the Unix socket to be there (default 0: not at all). */
export type RelayTarget = { unix: string; waitS?: number } | { tcp: { host: string; port: number } };

/** Spawns the relay; its stdin/stdout carry the raw bytes, both directions with pipe backpressure. */
export function openRelay(env: SandboxEnvironment, target: RelayTarget, user?: string): ChildProcessWithoutNullStreams {
  const [kind, where] = 'unix' in target ? ['unix', target.unix] : ['tcp', `${target.tcp.host}:${target.tcp.port}`];
  const waitS = 'unix' in target ? (target.waitS ?? 0) : 0;
  const argv = remoteArgv(env, { user, interactive: false }, ['bash', '-c', RELAY, 'sandbox-desk', kind, where, PY_RELAY, String(waitS)]);
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin.on('error', () => undefined);
  return child;
}
