import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

export function docker(...args: string[]): string {
  return execFileSync('docker', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/**
 * A tiny HTTP server for sandbox-desk/base (python3-minimal: sockets and threads only, no http.server):
 * `GET /` answers the server's name, `GET /big` 100 MiB of zeros (the benchmark's download); UDP
 * datagrams on 9999 are printed to the container's log (to show that none arrived from a sandbox).
 */
const SERVER = `
import socket, threading, sys
name = sys.argv[1].encode()
def handle(c):
    try:
        d = b''
        while b'\\r\\n\\r\\n' not in d:
            x = c.recv(4096)
            if not x: return
            d += x
        path = d.split(b' ')[1] if b' ' in d else b'/'
        if path.endswith(b'/big'):
            n = 100 * 1024 * 1024
            c.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\nConnection: close\\r\\n\\r\\n' % n)
            chunk = bytes(1 << 20)
            for _ in range(100): c.sendall(chunk)
        else:
            c.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\nConnection: close\\r\\n\\r\\n' % len(name) + name)
    except OSError: pass
    finally: c.close()
def udp():
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(('0.0.0.0', 9999))
    while True:
        d, a = u.recvfrom(2048); print('udp', d.decode(errors='replace'), a[0], flush=True)
threading.Thread(target=udp, daemon=True).start()
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); l.bind(('0.0.0.0', 8000)); l.listen(64)
print('ready', flush=True)
while True:
    c, _ = l.accept(); threading.Thread(target=handle, args=(c,), daemon=True).start()
`;

export interface TestServers {
  network: string;
  /** name → IP on the test's own network (reachable from this machine, and from open sandboxes via the bridge). */
  ip: Record<'a' | 'b', string>;
  /** name → IP on the default bridge (what an `open` sandbox reaches). */
  bridgeIp: Record<'a' | 'b', string>;
  container: Record<'a' | 'b', string>;
  dispose(): void;
}

/** Two servers in their own containers on a network this test creates (and removes). */
export function startTestServers(): TestServers {
  const tag = randomBytes(3).toString('hex');
  const network = `sdnt-${tag}`;
  docker('network', 'create', '--label', 'io.sandbox-desk.test=network', network);
  const container = { a: `sdnt-${tag}-a`, b: `sdnt-${tag}-b` };
  const ip = { a: '', b: '' };
  const bridgeIp = { a: '', b: '' };
  for (const k of ['a', 'b'] as const) {
    docker(
      'run',
      '-d',
      '--name',
      container[k],
      '--network',
      network,
      '--label',
      'io.sandbox-desk.test=network',
      'sandbox-desk/base:latest',
      'python3',
      '-u',
      '-c',
      SERVER,
      `server-${k}`,
    );
    docker('network', 'connect', 'bridge', container[k]);
    ip[k] = docker('inspect', '-f', `{{(index .NetworkSettings.Networks "${network}").IPAddress}}`, container[k]);
    bridgeIp[k] = docker('inspect', '-f', '{{.NetworkSettings.Networks.bridge.IPAddress}}', container[k]);
  }
  for (const k of ['a', 'b'] as const) {
    for (let i = 0; i < 100 && !docker('logs', container[k]).includes('ready'); i++) execFileSync('sleep', ['0.2']);
  }
  return {
    network,
    ip,
    bridgeIp,
    container,
    dispose() {
      for (const c of Object.values(container)) {
        try {
          docker('rm', '-f', c);
        } catch {
          // already gone
        }
      }
      try {
        docker('network', 'rm', network);
      } catch {
        // already gone
      }
    },
  };
}

/**
 * Shell helpers for inside a sandbox (bash only: sandbox-desk/base has no curl and a python without
 * http): `via_proxy HOST PORT` sends an absolute-form GET through $HTTP_PROXY, `via_connect HOST PORT`
 * a CONNECT then a GET in the tunnel, `direct IP PORT` a GET straight to the address; each prints the
 * status line and the body's last line, or `FAILED <why>`.
 */
export const CLIENT = String.raw`
proxy_hp() { local p=\${HTTP_PROXY#http://}; p=\${p%/}; echo "\${p%:*} \${p##*:}"; }
via_proxy() { read -r ph pp < <(proxy_hp); [ -n "$ph" ] || { echo "FAILED no proxy"; return; }
  exec 3<>"/dev/tcp/$ph/$pp" || { echo "FAILED connect"; return; }
  printf 'GET http://%s:%s/ HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n\r\n' "$1" "$2" "$1" "$2" >&3
  local r; r=$(timeout 10 cat <&3); exec 3>&-; [ -n "$r" ] || { echo "FAILED empty"; return; }
  echo "$(head -1 <<<"$r" | tr -d '\r') $(tail -1 <<<"$r")"; }
via_connect() { read -r ph pp < <(proxy_hp); [ -n "$ph" ] || { echo "FAILED no proxy"; return; }
  exec 3<>"/dev/tcp/$ph/$pp" || { echo "FAILED connect"; return; }
  printf 'CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n' "$1" "$2" "$1" "$2" >&3
  local first; IFS= read -r -t 10 first <&3; first=\${first%$'\r'}
  case "$first" in *" 200 "*) ;; *) echo "$first"; exec 3>&-; return;; esac
  while IFS= read -r -t 10 l <&3; do [ "$l" = $'\r' ] && break; done
  printf 'GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$1" >&3
  echo "$first $(timeout 10 cat <&3 | tail -1)"; exec 3>&-; }
direct() { timeout 8 bash -c 'exec 3<>"/dev/tcp/$0/$1" || exit 1; printf "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" >&3; timeout 5 cat <&3 | tail -1' "$1" "$2" 2>&1 | tail -1 || true; }
`.replace(/\\\$/g, '$');
