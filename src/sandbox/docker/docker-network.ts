/**
 * Network policy for Docker sandboxes, enforced by the engine where the sandbox's root cannot lift it:
 *
 * - `open`: the default bridge network, as before.
 * - `offline`: only the sandbox's own `--internal` network (no gateway, no NAT, no DNS beyond the
 *   network's container names), and nothing else on it: no route at all.
 * - `allow`: that internal network, and a relay container (`<name>-egress`) in the sandbox's own network
 *   namespace (`--network container:<sandbox>`) that makes the proxy address 127.0.0.1:3128 there and
 *   passes its listening socket to the app's egress proxy through a Unix socket bind-mounted from the
 *   data dir (egress-relay-script.ts). The namespace has no route out, so the proxy — which checks
 *   every destination — is the only way out; the proxy dead means no way out (fails closed).
 *   The relay shares the namespace of one container incarnation: it is (re)started after the sandbox
 *   starts (`relayFollows`), and made again for a recreated container (a restore).
 *
 * Switching is `docker network connect/disconnect` on the live container: it takes effect on the next
 * connection. Commands get HTTP(S)_PROXY through `docker exec -e` (proxyEnvFor), read from the engine's
 * truth (which networks the container is on), so every process agrees without a shared cache.
 */
import type Docker from 'dockerode';
import type { NetworkPolicy } from '../../shared/network-policy.js';
import { statusOf } from './docker-errors.js';
import { LINKED_LINE, RELAY_SOCKET_DIR, relayScript } from './egress-relay-script.js';

/** The proxy address inside the sandbox: its own loopback (the relay's listener lives in its namespace). */
export const RELAY_HOST = '127.0.0.1';
export const RELAY_PORT = 3128;
/**
 * How long a start waits for its relay to link. Linking takes tens of milliseconds; on a loaded
 * two-core machine the relay's container and its python can take seconds to start, and a bound
 * reached too soon hands the sandbox to its first command before the proxy address exists (every
 * connection refused: not a leak, but a first command that fails for no reason of its own).
 */
const LINK_WAIT_MS = 15_000;
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
  const url = `http://${RELAY_HOST}:${RELAY_PORT}`;
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    ALL_PROXY: url,
    // The sandbox's own services stay local (the proxy's address itself is not a destination).
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

export class DockerNetworkPolicy {
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

  /**
   * The relay exists for this container incarnation. Made again when it shares another container's
   * namespace (an older relay, or the container was recreated: a restore). Started by `relayFollows`.
   */
  private async ensureRelay(
    containerId: string,
    names: DockerNetworkNames,
    socketDir: string,
    labels: Record<string, string>,
  ): Promise<void> {
    let existing = await ignore404(this.docker.getContainer(names.relay).inspect());
    if (existing && existing.HostConfig?.NetworkMode !== `container:${containerId}`) {
      await this.removeRelay(names);
      existing = null;
    }
    if (!existing) {
      await this.docker.createContainer({
        name: names.relay,
        Image: this.relayImage,
        Entrypoint: ['python3', '-u', '-c', relayScript(RELAY_PORT, RELAY_SOCKET_DIR, RELAY_HOST)],
        Cmd: [],
        User: 'root',
        Labels: { ...labels, 'io.sandbox-desk.role': 'egress-relay' },
        HostConfig: {
          NetworkMode: `container:${containerId}`,
          Binds: [`${socketDir}:${RELAY_SOCKET_DIR}`],
          // Not restarted by the engine: alone it would come back in a namespace nobody uses.
          RestartPolicy: { Name: 'no' },
          CapDrop: ['ALL'],
          SecurityOpt: ['no-new-privileges'],
          ReadonlyRootfs: true,
          Memory: 64 * 2 ** 20,
          PidsLimit: 64,
        },
      });
    }
  }

  /**
   * After the container (re)started: its relay, if it has one, joins the new namespace — (re)started
   * when it is not running or started before the container did (then its namespace is the previous
   * run's, cut off from the sandbox). Also on the way to a command's environment, so a container
   * restarted behind our back gets its proxy back. true: the relay runs in the container's namespace.
   */
  async relayFollows(containerId: string): Promise<boolean> {
    const info = await ignore404(this.docker.getContainer(containerId).inspect());
    return info ? this.follow(info) : false;
  }

  /** relayFollows for a container already inspected (apply and proxyEnvFor have it at hand). */
  private async follow(info: Docker.ContainerInspectInfo): Promise<boolean> {
    if (!info.State.Running) return false;
    const names = networkNamesOf(info.Name);
    const relay = await ignore404(this.docker.getContainer(names.relay).inspect());
    if (!relay) return false;
    if (relay.HostConfig?.NetworkMode !== `container:${info.Id}`) return false;
    if (relay.State.Running && !startedBefore(relay.State.StartedAt, info.State.StartedAt)) return true;
    const c = this.docker.getContainer(names.relay);
    if (relay.State.Running) await c.restart({ t: 0 });
    else
      await c.start().catch((err: unknown) => {
        if (statusOf(err) !== 304) throw err;
      });
    await this.linked(names.relay);
    return true;
  }

  /**
   * Until the relay says it has passed its listener (bounded: LINK_WAIT_MS), so the first command after
   * a start finds the proxy address (before the relay binds it, connections are refused; after, they
   * wait in its backlog for the proxy). Not linked in time (no proxy): the sandbox fails closed anyway.
   */
  private async linked(relay: string): Promise<void> {
    const until = Date.now() + LINK_WAIT_MS;
    const c = this.docker.getContainer(relay);
    const started = (await ignore404(c.inspect()))?.State.StartedAt;
    if (!started) return;
    // Lines of this run only: a restarted container keeps the previous run's log.
    const line = new RegExp(`(\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(?:\\.\\d+)?Z) ${LINKED_LINE}`, 'g');
    while (Date.now() < until) {
      const out = await c.logs({ stdout: true, stderr: true, timestamps: true, tail: 20 }).catch(() => Buffer.alloc(0));
      for (const m of Buffer.from(out as unknown as Buffer)
        .toString('latin1')
        .matchAll(line))
        if (!startedBefore(m[1]!, started)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async removeRelay(names: DockerNetworkNames): Promise<void> {
    await ignore404(this.docker.getContainer(names.relay).remove({ force: true }));
  }

  /** Puts the container on the networks its policy asks for (live or not), and the relay up or down. */
  async apply(containerId: string, policy: NetworkPolicy, socketDir: string, labels: Record<string, string>): Promise<void> {
    const info = await this.docker.getContainer(containerId).inspect();
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
    if (policy.mode !== 'allow') await this.removeRelay(names);
    // First the internal network, then away from the bridge: never a moment on both with a relay up.
    await connect(names.network);
    await disconnect('bridge');
    for (const other of on) if (other !== names.network && other !== 'bridge') await disconnect(other);
    if (policy.mode === 'allow') {
      await this.ensureRelay(info.Id, names, socketDir, labels);
      // Networks connected or not, the container's run (its namespace) is the one inspected above.
      await this.follow(info);
    }
  }

  /** The env a command gets: the proxy's address when the container is on its network and has its relay. */
  async proxyEnvFor(containerId: string): Promise<Record<string, string>> {
    const info = await ignore404(this.docker.getContainer(containerId).inspect());
    if (!info) return {};
    const names = networkNamesOf(info.Name);
    const nets = Object.keys(info.NetworkSettings?.Networks ?? {});
    if (!nets.includes(names.network)) return {};
    return (await this.follow(info)) ? proxyEnv() : {};
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

/**
 * Whether the engine time `a` is before `b` (RFC 3339 with nanoseconds, trailing zeros trimmed: not
 * comparable as strings, and Date keeps only milliseconds).
 */
export function startedBefore(a: string, b: string): boolean {
  const split = (t: string): [number, string] => {
    const m = /^(.*?)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(t);
    if (!m) return [Date.parse(t), ''];
    return [Date.parse(`${m[1]}${m[3]}`), (m[2] ?? '').padEnd(9, '0')];
  };
  const [sa, na] = split(a);
  const [sb, nb] = split(b);
  return sa !== sb ? sa < sb : na < nb;
}
