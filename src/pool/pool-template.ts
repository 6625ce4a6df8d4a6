import { createHash } from 'node:crypto';
import { idleMemoryMiB, type PoolTemplateConfig } from '../platform/config.js';
import type { PoolTemplate } from '../shared/pool-types.js';
import { DEFAULT_DOCKER_IMAGE } from '../sandbox/docker/docker-provider.js';

/** A pool's template (the agent-sandbox vocabulary: a pool of a template, a claim); shared/pool-types.ts. */
export type { PoolTemplate };

/**
 * CPU a pooled sandbox may use while it is made and while it waits: a quarter of a CPU (its own limit when
 * lower). The least CPU weight alone does not keep a desktop fill from costing a viewed desktop frames:
 * the member's start-up (Xvnc, Xfce, Chromium) slowed the viewed stream in proportion to the CPU it got
 * even at weight 2 (the two cores' shared caches and memory, the kernel's work for it), so its rate is
 * what is capped. Measured with bench/warm.ts's refill scenario, the two caps' fills alternated in one run
 * (load ~4): half a CPU kept the viewed stream at 0.55 of its idle fps, a quarter at 0.75; a fill takes
 * ~1.5 s longer.
 */
export const IDLE_CPUS = 0.25;
/** The cap a fill gets once aged (FILL_AGING_MS), with AGED_FILL_CPU_SHARES: enough to finish its start-up in time. */
export const AGED_FILL_CPUS = 0.5;
/**
 * Docker's relative CPU weight while pooled (the default is 1024; 2 is the kernel's least): a running
 * sandbox wins every contest. 64 still cost a viewed desktop a fifth of its frames while a desktop pool
 * refilled (bench/warm.ts refill-impact 0.78).
 */
export const IDLE_CPU_SHARES = 2;
/**
 * The weight a fill gets once it has run FILL_AGING_MS without finishing: under a desktop that keeps its
 * CPU busy, the least weight can hold a member's desktop start back past its 30 s readiness wait, the
 * fill fails, and every retry fails alike — the pool never fills. A quarter of a running sandbox's weight
 * (1024) still yields 4:1 to it.
 */
export const AGED_FILL_CPU_SHARES = 256;
/**
 * How long a fill runs at the least weight before it is aged: a desktop fill takes ~5–15 s (a quiet
 * machine; bench/warm.ts refill-seconds), and its desktop's readiness wait gives up 30 s after it began,
 * a few seconds into the fill — aged at 20 s, a starved member still has about 15 s at the higher weight.
 */
export const FILL_AGING_MS = 20_000;

export function templateOf(t: Pick<PoolTemplateConfig, 'image' | 'cpus' | 'memoryMiB' | 'desktop'>): PoolTemplate {
  return { image: t.image ?? DEFAULT_DOCKER_IMAGE, cpus: t.cpus ?? null, memoryMiB: t.memoryMiB ?? null, desktop: t.desktop };
}

/** The template as one line a person reads (`pool list`, reasons). */
export function describeTemplate(t: PoolTemplate): string {
  const parts = [t.image];
  if (t.cpus !== null) parts.push(`cpus ${t.cpus}`);
  if (t.memoryMiB !== null) parts.push(`memory ${t.memoryMiB} MiB`);
  if (t.desktop) parts.push('desktop');
  return parts.join(', ');
}

/** A short stable id of the template: its members' names and the pool's label carry it. */
export function templateKey(t: PoolTemplate): string {
  const canonical = JSON.stringify([t.image, t.cpus, t.memoryMiB, t.desktop]);
  return createHash('sha256').update(canonical).digest('hex').slice(0, 10);
}

/** The options a cold create of this template would pass (what a claimed sandbox's record says). */
export function claimedOptions(t: PoolTemplate): Record<string, string> {
  return {
    ...(t.cpus !== null ? { cpus: String(t.cpus) } : {}),
    ...(t.memoryMiB !== null ? { memory: String(t.memoryMiB) } : {}),
    ...(t.desktop ? { desktop: 'true' } : {}),
  };
}

/** The options a pooled sandbox is made with: the idle caps (lifted at the claim). */
export function idleOptions(t: PoolTemplate): Record<string, string> {
  return {
    cpus: String(Math.min(t.cpus ?? IDLE_CPUS, IDLE_CPUS)),
    memory: String(idleMemoryMiB({ memoryMiB: t.memoryMiB ?? undefined, desktop: t.desktop })),
    ...(t.desktop ? { desktop: 'true' } : {}),
  };
}

/** What a create asks for, as far as a pool is concerned. */
export interface CreateAsk {
  backend: string;
  image?: string | undefined;
  start: boolean;
  mounts: readonly unknown[];
  env: Record<string, string>;
  options: Record<string, string>;
}

const SERVABLE_OPTIONS = new Set(['cpus', 'memory', 'desktop']);

/** The template a create asks for, or why no pool can serve it (said as `warmReason`). */
export function askedTemplate(req: CreateAsk): { template: PoolTemplate } | { reason: string } {
  if (req.backend !== 'docker') return { reason: `warm pools serve docker sandboxes; this create asked for the ${req.backend} backend` };
  if (!req.start) return { reason: 'created stopped (--no-start): a pooled sandbox is already running' };
  if (req.mounts.length > 0) return { reason: 'host mounts (--mount) are bound when a container is made: a pooled one cannot take them' };
  if (Object.keys(req.env).length > 0)
    return { reason: 'environment variables (--env) are set when a container is made: a pooled one cannot take them' };
  const other = Object.keys(req.options).filter((k) => !SERVABLE_OPTIONS.has(k));
  if (other.length > 0) return { reason: `option ${other.join(', ')} is not part of any pool's template` };
  const num = (v: string | undefined): number | null => (v === undefined ? null : Number(v));
  return {
    template: {
      image: req.image ?? DEFAULT_DOCKER_IMAGE,
      cpus: num(req.options.cpus),
      memoryMiB: num(req.options.memory),
      desktop: req.options.desktop === 'true',
    },
  };
}

export function sameTemplate(a: PoolTemplate, b: PoolTemplate): boolean {
  return a.image === b.image && a.cpus === b.cpus && a.memoryMiB === b.memoryMiB && a.desktop === b.desktop;
}
