/**
 * The proxy's answer to "which process in this sandbox opened the connection from port P": for a
 * docker sandbox (target.json names its container), the container's init pid on this machine (asked
 * of the engine once per container start, then kept), the socket's inode by its exact 4-tuple in the
 * container's network namespace and the process holding it among the container's own, both by the
 * helper of sock-diag.ts in one round trip (where that cannot run, the /proc/net/tcp walk and the
 * fd walk of process-of-connection.ts on the lookup thread), then that process described. Bounded (LOOKUP_MS): a log line waits at most that long, the connection
 * not at all; with the pid at hand (warm) it waits for a few /proc reads only, so a line is on the log
 * before the connection's answer reaches the client. QEMU sandboxes have no target: their guests' processes are not visible from this machine.
 */
import { existsSync } from 'node:fs';
import Docker from 'dockerode';
import { resolveDockerEndpoint } from '../docker/docker-endpoint.js';
import { RELAY_PORT } from '../docker/docker-network.js';
import type { ConnectionProcess } from './egress-proxy.js';
import { TargetReader } from './network-files.js';
import { describeProcess, within } from './process-of-connection.js';
import { ProcessLookupThread } from './process-lookup-thread.js';
import type { ProxySource } from './proxy-protocol.js';
import { SockDiag } from './sock-diag.js';

const LOOKUP_MS = 1500;
/** How old a kept init pid may get before the daemon's sync asks the engine again (a restart changes it). */
const PID_TTL_MS = 10_000;

export class DockerProcessLookup {
  private docker: Docker | null = null;
  private readonly pids = new Map<string, { pid: number; at: number }>();
  /** The /proc reads run off the proxy's event loop (process-lookup-thread.ts). */
  private readonly thread = new ProcessLookupThread();
  private readonly diag = new SockDiag();

  /** Read on every connection: one stat unless it changed. */
  private readonly targets: TargetReader;

  constructor(dataDir: string) {
    this.targets = new TargetReader(dataDir);
  }

  private async initPid(container: string, fresh: boolean): Promise<number | null> {
    const hit = this.pids.get(container);
    if (hit && !fresh) return hit.pid;
    try {
      this.docker ??= new Docker(resolveDockerEndpoint().options);
      const info = await this.docker.getContainer(container).inspect();
      const pid = info.State.Running ? info.State.Pid : 0;
      if (pid > 0) this.pids.set(container, { pid, at: Date.now() });
      return pid > 0 ? pid : null;
    } catch {
      return null;
    }
  }

  /** Keeps the container's init pid at hand (the daemon calls it as it syncs), so a lookup need not ask the engine. */
  async warm(sandbox: string): Promise<void> {
    const container = this.targets.read(sandbox)?.docker;
    if (!container) return;
    const hit = this.pids.get(container);
    // A restarted container has a new init pid: the old one gone from /proc says so at once.
    if (!hit || Date.now() - hit.at > PID_TTL_MS || !existsSync(`/proc/${hit.pid}`)) {
      const pid = await this.initPid(container, true);
      // The helper up and in the namespace before the first connection asks (sock-diag.ts).
      if (pid !== null && pid !== hit?.pid) {
        this.diag.prepare(pid);
        this.thread.prepare();
      }
    }
  }

  async of(sandbox: string, source: ProxySource): Promise<ConnectionProcess | null> {
    const container = this.targets.read(sandbox)?.docker;
    if (!container) return null;
    // Only the very first connection after the daemon started waits for the engine; after that the
    // pid is at hand (warm), so the lookup — and the log line waiting for it — takes no engine round trip.
    const pid = await this.initPid(container, false);
    if (pid === null) return null;
    return within(LOOKUP_MS, this.lookUp(pid, source));
  }

  private async lookUp(pid: number, source: ProxySource): Promise<ConnectionProcess | null> {
    const found = await this.diag.inodeOf(pid, { src: source.ip, sport: source.port, dst: source.dstIp, dport: source.dstPort });
    if (found === null) return null;
    // The helper cannot run here (no python3, or no right to enter the namespace): the slow walk, as before.
    if (found === 'unavailable') return this.thread.of(pid, source.port, { remotePort: RELAY_PORT });
    // The helper found the holder: a few /proc reads describe it, here (no thread round trip). Else the
    // walk on the thread (the helper may not read every process's fds).
    if (found.holder > 0) return describeProcess(pid, found.holder);
    return this.thread.ofSocket(pid, found.inode);
  }

  dispose(): void {
    this.diag.dispose();
    void this.thread.dispose();
  }
}
