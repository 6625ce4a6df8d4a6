/**
 * Network policy for Docker sandboxes, enforced by the engine where the sandbox's root cannot lift it:
 *
 * - `open`: the default bridge network, as before.
 * - `offline`: only the sandbox's own `--internal` network (no gateway, no NAT, no DNS beyond the
 *   network's container names), and nothing else on it: no route at all.
 * - `allow`: that internal network plus a relay container on it (`<name>-egress`, alias
 *   `sandbox-desk-egress`), which forwards TCP port 3128 to the app's egress proxy through a Unix
 *   socket bind-mounted from the data dir. The relay has no other network either, so the proxy — which
 *   checks every destination — is the only way out; the proxy dead means no way out (fails closed).
 *
 * Switching is `docker network connect/disconnect` on the live container: it takes effect on the next
 * connection. Commands get HTTP(S)_PROXY through `docker exec -e` (proxyEnvFor), read from the engine's
 * truth (which networks the container is on), so every process agrees without a shared cache.
 */
import type Docker from 'dockerode';
import type { NetworkPolicy } from '../../shared/network-policy.js';
import { statusOf } from './docker-errors.js';
import { RELAY_SOCKET_DIR, relayScript } from './egress-relay-script.js';
import { writeTarget } from '../network/network-files.js';

export const RELAY_ALIAS = 'sandbox-desk-egress';
export const RELAY_PORT = 3128;
export interface DockerNetworkNames {
  network: string;
  relay: string;
}

export function networkNamesOf(containerName: string): DockerNetworkNames {
  const base = containerName.replace(/^\//, '');
  return { network: `${base}-net`, relay: `${base}-egress` };
}

/** What the sandbox's processes are told (enforcement never depends on them honouring it). */
export function proxyEnv(): Record<string, string> {
  const url = `http://${RELAY_ALIAS}:${RELAY_PORT}`;
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    ALL_PROXY: url,
    NO_PROXY: 'localhost,127.0.0.1,::1',
    no_proxy: 'localhost,127.0.0.1,::1',
    SANDBOX_DESK_PROXY: url,
  };
}

async function ignore404<T>(p: Promise<T>): Promise<T | null> {
  try {
    return await p;
  } catch (err) {
    if (statusOf(err) === 404) return null;
    throw err;
  }
}

/**
 * Puts the relay's address into the sandbox's /etc/hosts ($1 address, $2 name; an older line for the
 * name is replaced; no address: the line is removed). Why: HTTP_PROXY names the relay, and without this
 * every connection asked Docker's DNS for that name first — the largest part of a small request's cost
 * through the proxy (bench/network.ts). The name stays in the environment, so a process that outlives
 * a relay's new address still finds it (through DNS, as before). Written in place: /etc/hosts is a bind
 * mount. Best effort: a read-only /etc/hosts just keeps the DNS path.
 */
const PIN_HOSTS_SCRIPT = `f=/etc/hosts; t=$(grep -v "[[:space:]]$2\\$" "$f"); if [ -n "$1" ]; then printf '%s\n%s\t%s\n' "$t" "$1" "$2" > "$f"; else printf '%s\n' "$t" > "$f"; fi`;

export class DockerNetworkPolicy {
  /** container id + start time → the relay address pinned in its /etc/hosts (so it is written once). */
  private readonly pinned = new Map<string, string>();

  constructor(
    private readonly docker: Docker,
    private readonly relayImage: string,
  ) {}

  private async ensureNetwork(name: string, labels: Record<string, string>): Promise<void> {
    if (await ignore404(this.docker.getNetwork(name).inspect())) return;
    await this.docker
      .createNetwork({
        Name: name,
        Driver: 'bridge',
        Internal: true,
        CheckDuplicate: true,
        Labels: labels,
        EnableIPv6: false,
        // No address for this machine on the network: the host's own services (listening on 0.0.0.0) are
        // not reachable either (--internal alone only stops forwarding, not traffic to the bridge's IP).
        Options: { 'com.docker.network.bridge.inhibit_ipv4': 'true' },
      })
      .catch((err: unknown) => {
        if (statusOf(err) !== 409) throw err;
      });
  }

  private async ensureRelay(names: DockerNetworkNames, socketDir: string, labels: Record<string, string>): Promise<void> {
    const existing = await ignore404(this.docker.getContainer(names.relay).inspect());
    if (existing?.State.Running) return;
    if (!existing) {
      await this.docker.createContainer({
        name: names.relay,
        Image: this.relayImage,
        Entrypoint: ['python3', '-u', '-c', relayScript(RELAY_PORT)],
        Cmd: [],
        User: 'root',
        Labels: { ...labels, 'io.sandbox-desk.role': 'egress-relay' },
        HostConfig: {
          NetworkMode: names.network,
          Binds: [`${socketDir}:${RELAY_SOCKET_DIR}`],
          RestartPolicy: { Name: 'unless-stopped' },
          CapDrop: ['ALL'],
          SecurityOpt: ['no-new-privileges'],
          ReadonlyRootfs: true,
          Memory: 64 * 2 ** 20,
          PidsLimit: 256,
        },
        NetworkingConfig: { EndpointsConfig: { [names.network]: { Aliases: [RELAY_ALIAS] } } },
      });
    }
    await this.docker
      .getContainer(names.relay)
      .start()
      .catch((err: unknown) => {
        if (statusOf(err) !== 304) throw err;
      });
  }

  async removeRelay(names: DockerNetworkNames): Promise<void> {
    await ignore404(this.docker.getContainer(names.relay).remove({ force: true }));
  }

  /** Puts the container on the networks its policy asks for (live or not), and the relay up or down. */
  async apply(containerId: string, policy: NetworkPolicy, socketDir: string, labels: Record<string, string>): Promise<void> {
    const info = await this.docker.getContainer(containerId).inspect();
    // For the proxy's "which process made this connection" (process-of-connection.ts).
    if (policy.mode === 'allow') writeTarget(socketDir, { docker: info.Id });
    const names = networkNamesOf(info.Name);
    const on = new Set(Object.keys(info.NetworkSettings?.Networks ?? {}));
    const connect = async (net: string): Promise<void> => {
      if (!on.has(net)) await this.docker.getNetwork(net).connect({ Container: containerId });
    };
    const disconnect = async (net: string): Promise<void> => {
      if (on.has(net)) await ignore404(this.docker.getNetwork(net).disconnect({ Container: containerId, Force: true }));
    };
    if (policy.mode === 'open') {
      await connect('bridge');
      await disconnect(names.network);
      await this.removeRelay(names);
      return;
    }
    await this.ensureNetwork(names.network, labels);
    // First the internal network, then away from the bridge: never a moment on both with a relay up.
    if (policy.mode === 'allow') await this.ensureRelay(names, socketDir, labels);
    else await this.removeRelay(names);
    await connect(names.network);
    await disconnect('bridge');
    for (const other of on) if (other !== names.network && other !== 'bridge') await disconnect(other);
    if (info.State.Running) {
      const relay = policy.mode === 'allow' ? await ignore404(this.docker.getContainer(names.relay).inspect()) : null;
      await this.pinRelayHost(containerId, info.State.StartedAt, relay?.NetworkSettings?.Networks?.[names.network]?.IPAddress ?? '');
    }
  }

  /** The env a command gets: the proxy's address when the container is on its network and the relay runs. */
  async proxyEnvFor(containerId: string): Promise<Record<string, string>> {
    const info = await ignore404(this.docker.getContainer(containerId).inspect());
    if (!info) return {};
    const names = networkNamesOf(info.Name);
    const nets = Object.keys(info.NetworkSettings?.Networks ?? {});
    if (!nets.includes(names.network)) return {};
    const relay = await ignore404(this.docker.getContainer(names.relay).inspect());
    if (!relay) return {};
    if (info.State.Running)
      await this.pinRelayHost(containerId, info.State.StartedAt, relay.NetworkSettings?.Networks?.[names.network]?.IPAddress ?? '');
    return proxyEnv();
  }

  /** See PIN_HOSTS_SCRIPT. Never fails: without the line the name is resolved by DNS. */
  private async pinRelayHost(containerId: string, startedAt: string, ip: string): Promise<void> {
    const key = `${containerId}:${startedAt}`;
    if (this.pinned.get(key) === ip) return;
    try {
      const ex = await this.docker.getContainer(containerId).exec({
        Cmd: ['sh', '-c', PIN_HOSTS_SCRIPT, 'sh', ip, RELAY_ALIAS],
        User: 'root',
        AttachStdout: true,
        AttachStderr: true,
      });
      const stream = await ex.start({});
      await new Promise<void>((resolve) => {
        stream.on('end', resolve);
        stream.on('close', resolve);
        stream.on('error', () => resolve());
        stream.resume();
      });
      if ((await ex.inspect()).ExitCode === 0) this.pinned.set(key, ip);
    } catch {
      // best effort (see above)
    }
  }

  /** Removes the relay and the sandbox's network (after the container is gone). */
  async removeAll(containerName: string): Promise<void> {
    const names = networkNamesOf(containerName);
    await this.removeRelay(names);
    await ignore404(this.docker.getNetwork(names.network).remove());
  }

  async stopRelay(containerName: string): Promise<void> {
    await this.removeRelay(networkNamesOf(containerName));
  }
}
