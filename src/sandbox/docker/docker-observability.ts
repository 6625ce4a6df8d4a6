import type Docker from 'dockerode';
import type { EngineInfo } from '../../shared/observability-types.js';
import type { IDisposable } from '../../shared/lifecycle.js';
import { SandboxDeskError } from '../../shared/errors.js';
import type { LogCapability, LogFollower, LogSourceSpec, ResourceCapability, ResourceSample } from '../observability.js';
import type { SandboxRef } from '../provider.js';
import type { DockerEndpoint } from './docker-endpoint.js';
import { engineMessage, isUnreachable, statusOf } from './docker-errors.js';
import { decodeLogFrames, LogFrameDecoder } from './docker-log-frames.js';

/** The parts of the engine's stats answer we read (GET /containers/ID/stats?stream=false&one-shot=true). */
export interface DockerStatsJson {
  read?: string;
  cpu_stats?: { cpu_usage?: { total_usage?: number } };
  memory_stats?: { usage?: number; limit?: number; stats?: Record<string, number> };
}

/**
 * A container's counters as `docker stats` shows them: memory is usage minus the page cache the kernel
 * can drop (cgroup v2 `inactive_file`, v1 `total_inactive_file`), so an idle container reads small.
 */
export function sampleFromStats(s: DockerStatsJson, nowMs = Date.now()): ResourceSample | null {
  const cpu = s.cpu_stats?.cpu_usage?.total_usage;
  const usage = s.memory_stats?.usage;
  if (cpu === undefined || usage === undefined) return null;
  const st = s.memory_stats?.stats ?? {};
  const cache = st.inactive_file ?? st.total_inactive_file ?? 0;
  const read = s.read && !s.read.startsWith('0001-') ? Date.parse(s.read) : NaN;
  const limit = s.memory_stats?.limit;
  return {
    cpuNs: cpu,
    atMs: Number.isFinite(read) ? read : nowMs,
    memoryBytes: Math.max(0, usage - cache),
    // The engine reports the host's RAM as the limit of an unlimited container: still the useful bound.
    memoryLimitBytes: limit && limit > 0 ? limit : null,
  };
}

const CONTAINER_SOURCE = 'container';

function containerOf(docker: Docker, ref: SandboxRef): Docker.Container | null {
  return ref.backendRef ? docker.getContainer(ref.backendRef) : null;
}

/** `docker logs` of a sandbox's container: its main process's stdout and stderr. */
export function dockerLogs(docker: Docker): LogCapability<SandboxRef> {
  return {
    async sources(ref): Promise<LogSourceSpec[]> {
      const c = containerOf(docker, ref);
      let detail = `docker logs ${ref.backendRef?.slice(0, 12) ?? ''}`.trim();
      let exists = c !== null;
      if (c) {
        try {
          await c.inspect();
        } catch (err) {
          exists = false;
          detail =
            statusOf(err) === 404 ? 'the container was removed outside Sandbox Desk' : `the engine did not answer: ${engineMessage(err)}`;
        }
      } else detail = 'the sandbox has no container';
      return [{ id: CONTAINER_SOURCE, label: 'Container output', exists, detail }];
    },
    async read(ref, _source, tail): Promise<string> {
      const c = containerOf(docker, ref);
      if (!c) return '';
      const buf: Buffer = await c.logs({ stdout: true, stderr: true, follow: false, tail });
      return decodeLogFrames(buf);
    },
    async follow(ref, _source, tail, to: LogFollower): Promise<IDisposable> {
      const c = containerOf(docker, ref);
      if (!c) throw new SandboxDeskError('sandbox_missing', `sandbox ${ref.name} has no container`);
      const stream = (await c.logs({ stdout: true, stderr: true, follow: true, tail })) as NodeJS.ReadableStream & { destroy(): void };
      const frames = new LogFrameDecoder();
      let ended = false;
      const end = (err?: Error): void => {
        if (ended) return;
        ended = true;
        to.onEnd(err);
      };
      stream.on('data', (chunk: Buffer) => {
        const text = frames.push(chunk);
        if (text) to.onData(text);
      });
      stream.on('end', () => end());
      stream.on('error', (err: Error) => end(err));
      return {
        dispose: () => {
          ended = true;
          stream.destroy();
        },
      };
    },
  };
}

/** The engine's own counters of a container (one-shot: no second sample inside the engine). */
export function dockerResources(docker: Docker): ResourceCapability<SandboxRef> {
  return {
    async sample(ref): Promise<ResourceSample | null> {
      const c = containerOf(docker, ref);
      if (!c) return null;
      try {
        const s = (await c.stats({ stream: false, 'one-shot': true } as { stream: false })) as DockerStatsJson;
        return sampleFromStats(s);
      } catch (err) {
        if (statusOf(err) === 404 || statusOf(err) === 409) return null;
        throw err;
      }
    },
  };
}

interface DfJson {
  LayersSize?: number;
  Containers?: Array<{ SizeRw?: number }>;
  Volumes?: Array<{ UsageData?: { Size?: number } }>;
  BuildCache?: Array<{ Size?: number; Shared?: boolean }>;
}

/** What `docker system df` says, summed the way it prints it (shared layers counted once). */
export function diskFromDf(df: DfJson): NonNullable<EngineInfo['docker']>['disk'] {
  const sum = (xs: Array<number | undefined>) => xs.reduce<number>((a, b) => a + Math.max(0, b ?? 0), 0);
  return {
    images: Math.max(0, df.LayersSize ?? 0),
    containers: sum((df.Containers ?? []).map((c) => c.SizeRw)),
    volumes: sum((df.Volumes ?? []).map((v) => v.UsageData?.Size)),
    buildCache: sum((df.BuildCache ?? []).filter((b) => !b.Shared).map((b) => b.Size)),
  };
}

/** Reachable, version, disk used: never throws (an engine that is down is a state to show). */
export async function dockerEngineInfo(docker: Docker, endpoint: DockerEndpoint): Promise<NonNullable<EngineInfo['docker']>> {
  try {
    const v = (await docker.version()) as { Version?: string; ApiVersion?: string };
    const df = (await docker.df().catch(() => null)) as DfJson | null;
    return {
      reachable: true,
      error: null,
      endpoint: endpoint.url,
      version: v.Version ?? null,
      apiVersion: v.ApiVersion ?? null,
      disk: df ? diskFromDf(df) : null,
    };
  } catch (err) {
    return {
      reachable: false,
      error: isUnreachable(err) ? `the Docker engine at ${endpoint.url} is not reachable: ${engineMessage(err)}` : engineMessage(err),
      endpoint: endpoint.url,
      version: null,
      apiVersion: null,
      disk: null,
    };
  }
}
