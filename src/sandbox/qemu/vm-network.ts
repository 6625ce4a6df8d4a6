/**
 * Network policy for QEMU sandboxes: user-mode networking (slirp) with `restrict=on` for `offline` and
 * `allow` — the guest can contact nothing outside, whatever its root does, while SSH forwarded in from
 * the host's loopback still works (restrict only stops guest-initiated traffic). `allow` adds one
 * `guestfwd`: connections to 10.0.2.100:3128 inside the guest run `socat` on the host to the egress
 * proxy's Unix socket, the same proxy and allow list as Docker sandboxes. Slirp's DNS (10.0.2.3) does not
 * answer under restrict=on: the guest resolves nothing; proxied names are resolved on the host.
 *
 * The mode is part of the QEMU command line, so it changes at the next boot (`liveModeSwitch: false`);
 * the allow list lives in the proxy and changes at once. The plan is kept in the VM's folder.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NetworkMode } from '../../shared/network-policy.js';

export const GUEST_PROXY = 'http://10.0.2.100:3128';

export interface VmNetwork {
  mode: NetworkMode;
  /** The proxy's socket for this sandbox (allow). */
  socket: string | null;
}

const opt = (s: string): string => s.replace(/,/g, ',,');

export function vmNetworkFile(vmDir: string): string {
  return join(vmDir, 'network.json');
}

export function readVmNetwork(vmDir: string): VmNetwork {
  const f = vmNetworkFile(vmDir);
  if (!existsSync(f)) return { mode: 'open', socket: null };
  try {
    return JSON.parse(readFileSync(f, 'utf8')) as VmNetwork;
  } catch {
    // Unreadable: fail closed rather than open.
    return { mode: 'offline', socket: null };
  }
}

export function writeVmNetwork(vmDir: string, n: VmNetwork): void {
  writeFileSync(vmNetworkFile(vmDir), `${JSON.stringify(n)}\n`, { mode: 0o600 });
}

/** The `-netdev user,…` suffix a mode adds after the SSH hostfwd. */
export function netdevPolicySuffix(n: VmNetwork): string {
  if (n.mode === 'open') return '';
  if (n.mode === 'offline' || !n.socket) return ',restrict=on';
  return `,restrict=on,guestfwd=tcp:10.0.2.100:3128-cmd:${opt(`socat - UNIX-CONNECT:${n.socket}`)}`;
}

/** The env words commands in the guest get (after `env`): the proxy, when the mode is allow. */
export function guestProxyEnv(n: VmNetwork): string[] {
  if (n.mode !== 'allow') return [];
  return ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'ALL_PROXY', 'SANDBOX_DESK_PROXY'].map((k) => `${k}=${GUEST_PROXY}`);
}
