import { cpus, totalmem } from 'node:os';
import Docker from 'dockerode';
import type { DockerEndpoint } from '../sandbox/docker/docker-endpoint.js';
import { runInContainer } from '../sandbox/docker/docker-api-exec.js';

/** Labels every pooled container carries (set at creation; Docker never changes a container's labels). */
export const POOL_LABEL = 'io.sandbox-desk.pool';
/** The container's name when it was made: its inbox folder is named after it (see docker-inbox.ts). */
export { CREATED_AS_LABEL } from '../sandbox/docker/docker-inbox.js';

/** A container as the pool needs to know it. */
export interface PooledContainer {
  id: string;
  name: string;
  /** Its processes exist (a paused container's too: frozen, not ended). */
  running: boolean;
  /** Frozen by the cgroup freezer (`docker pause`): how an idle pooled desktop waits, using no CPU. */
  paused: boolean;
  imageId: string;
  labels: Record<string, string>;
}

/** CPU and memory of a container, as `docker update` sets them. null: as good as no limit. */
export interface PoolLimits {
  cpus: number | null;
  memoryMiB: number | null;
  cpuShares: number;
}

/**
 * The engine calls the pools make beyond the provider contract: what an image tag names now, a
 * container's state, live limits (idle caps on, lifted at a claim) and the rename that gives a claimed
 * container its user's name. An interface so the pool's faults are tested against a fake engine.
 */
export interface PoolEngine {
  /** The id the tag names now; null when there is no such image. */
  imageId(image: string): Promise<string | null>;
  /** null: the container is gone. */
  inspect(id: string): Promise<PooledContainer | null>;
  /** Containers of this data dir that a pool made (claimed since or not). */
  listPooled(instanceId: string): Promise<PooledContainer[]>;
  setLimits(id: string, limits: PoolLimits): Promise<void>;
  /** Idempotent: a container already so named is left alone. */
  rename(id: string, name: string): Promise<void>;
  /** Freezes the container (`docker pause`); one already paused is left alone. */
  pause(id: string): Promise<void>;
  /** Thaws the container; one not paused is left alone (a claim finished again after a crash). */
  unpause(id: string): Promise<void>;
  /**
   * Runs a short command in the container through the engine's API (no `docker` CLI process to start:
   * at a claim every exec costs the claimer's wait). Its exit code and its output (stdout and stderr).
   */
  run(id: string, argv: string[], opts: { user: string; timeoutMs: number }): Promise<{ code: number | null; output: string }>;
}

const statusOf = (err: unknown): number | undefined => (err as { statusCode?: number })?.statusCode;

/** The PoolEngine of a Docker engine (dockerode, the endpoint the docker provider uses). */
export class DockerPoolEngine implements PoolEngine {
  private readonly docker: Docker;

  constructor(endpoint: DockerEndpoint) {
    this.docker = new Docker(endpoint.options);
  }

  async imageId(image: string): Promise<string | null> {
    try {
      return (await this.docker.getImage(image).inspect()).Id;
    } catch (err) {
      if (statusOf(err) === 404) return null;
      throw err;
    }
  }

  async inspect(id: string): Promise<PooledContainer | null> {
    try {
      const i = await this.docker.getContainer(id).inspect();
      return {
        id: i.Id,
        name: i.Name.replace(/^\//, ''),
        running: i.State.Running,
        paused: i.State.Paused,
        imageId: i.Image,
        labels: i.Config.Labels ?? {},
      };
    } catch (err) {
      if (statusOf(err) === 404) return null;
      throw err;
    }
  }

  async listPooled(instanceId: string): Promise<PooledContainer[]> {
    const list = await this.docker.listContainers({
      all: true,
      filters: { label: [POOL_LABEL, `io.sandbox-desk.instance=${instanceId}`] },
    });
    return list.map((c) => ({
      id: c.Id,
      name: (c.Names[0] ?? '').replace(/^\//, ''),
      running: c.State === 'running' || c.State === 'paused',
      paused: c.State === 'paused',
      imageId: c.ImageID,
      labels: c.Labels ?? {},
    }));
  }

  async setLimits(id: string, l: PoolLimits): Promise<void> {
    // Docker cannot take a limit away from a running container: "none" is the whole machine.
    const memory = (l.memoryMiB ?? Math.floor(totalmem() / 2 ** 20)) * 2 ** 20;
    await this.docker.getContainer(id).update({
      NanoCpus: Math.round((l.cpus ?? cpus().length) * 1e9),
      CpuShares: l.cpuShares,
      Memory: memory,
      // A limited sandbox gets no swap beyond its memory (as docker-options.ts makes it); an unlimited one as
      // much again. Never -1: under cgroup v1 runc then writes the new memory limit above the old swap limit first, and fails.
      MemorySwap: l.memoryMiB === null ? memory * 2 : memory,
    });
  }

  async pause(id: string): Promise<void> {
    const c = await this.inspect(id);
    if (!c || c.paused) return;
    await this.docker.getContainer(id).pause();
  }

  async unpause(id: string): Promise<void> {
    try {
      await this.docker.getContainer(id).unpause();
    } catch (err) {
      // Not paused (thawed by an earlier attempt; engines answer 409 or 500 for it): the step is done.
      const c = await this.inspect(id).catch(() => null);
      if (c && !c.paused) return;
      throw err;
    }
  }

  async run(id: string, argv: string[], opts: { user: string; timeoutMs: number }): Promise<{ code: number | null; output: string }> {
    const r = await runInContainer(this.docker, id, argv, opts);
    return { code: r.code, output: r.stdout + r.stderr };
  }

  async rename(id: string, name: string): Promise<void> {
    const c = await this.inspect(id);
    if (!c || c.name === name) return;
    await this.docker.getContainer(id).rename({ name });
  }
}
