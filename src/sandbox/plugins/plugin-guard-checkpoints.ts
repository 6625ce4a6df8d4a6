import { SandboxDeskError } from '../../shared/errors.js';
import type { CheckpointArtifact, CheckpointCapability, CheckpointSpec, ProvisionResult } from '../provider.js';

/** What a plugin answered, in a few words (the guard's own wording, kept short here). */
function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object of the wrong shape' : `a ${typeof v}`;
}

/** The GuardedProvider's timed call: `long` picks the long timeout; `check` turns the plugin's answer into ours or throws. */
export type GuardedCall = <T>(method: string, long: boolean, fn: () => Promise<unknown>, check: (v: unknown) => T) => Promise<T>;

const broken = (who: string, what: string, v: unknown): SandboxDeskError =>
  new SandboxDeskError('backend_unavailable', `${who}: ${what} returned ${describe(v)}`, {
    hint: "the plugin is broken; report this to the plugin's author",
  });

/** Plain data only (strings, numbers, booleans, null), as the store keeps it. */
function plainDetails(v: unknown): Record<string, string | number | boolean | null> | undefined {
  if (!v || typeof v !== 'object') return undefined;
  return Object.fromEntries(
    Object.entries(v as Record<string, unknown>).filter(([, x]) => x === null || ['string', 'number', 'boolean'].includes(typeof x)),
  ) as Record<string, string | number | boolean | null>;
}

/** A checkpoint as the app will store it: a handle, whether memory is in it, a size, plain details. */
export function checkedArtifact(v: unknown, who: string, spec?: CheckpointSpec): CheckpointArtifact {
  const a = v as Partial<CheckpointArtifact> | null;
  if (!a || typeof a !== 'object' || typeof a.ref !== 'string' || !a.ref || a.ref.length > 1024 || a.ref.includes('\0'))
    throw broken(who, 'checkpoint', v);
  const memory = a.memory === true;
  // Asked for memory, got a disk-only checkpoint: never silently disk-only.
  if (spec?.memory && !memory)
    throw new SandboxDeskError('unsupported', `${who}: asked to save the memory, the plugin saved the disk only`, {
      hint: 'checkpoint without --memory',
    });
  const size = typeof a.sizeBytes === 'number' && Number.isFinite(a.sizeBytes) && a.sizeBytes >= 0 ? Math.round(a.sizeBytes) : null;
  const details = plainDetails(a.details);
  return { ref: a.ref, memory, sizeBytes: size, ...(details ? { details } : {}) };
}

/**
 * A plugin's CheckpointCapability as the app uses it: every call timed (checkpoint, restore and fork
 * with the long timeout), every answer checked like the lifecycle calls' answers are.
 */
export function guardCheckpoints(
  inner: CheckpointCapability,
  who: string,
  call: GuardedCall,
  /** The guard's check of a provision result (restore and fork answer the same shape). */
  checkedProvision: (v: unknown, who: string) => ProvisionResult,
): CheckpointCapability {
  const fn = <K extends keyof CheckpointCapability>(k: K): CheckpointCapability[K] => {
    const f = inner[k] as unknown;
    if (typeof f !== 'function')
      return () => Promise.reject(new SandboxDeskError('unsupported', `${who}: its checkpoints capability has no ${k}()`));
    return (f as (...a: unknown[]) => unknown).bind(inner) as CheckpointCapability[K];
  };
  const none = (): undefined => undefined;
  return {
    memorySupport: (ref) =>
      call(
        'memorySupport',
        false,
        () => fn('memorySupport')(ref),
        (v) => {
          const m = v as { supported?: unknown; reason?: unknown } | null;
          if (!m || typeof m !== 'object' || typeof m.supported !== 'boolean') throw broken(who, 'memorySupport', v);
          return { supported: m.supported, ...(typeof m.reason === 'string' ? { reason: m.reason.slice(0, 500) } : {}) };
        },
      ),
    checkpoint: (ref, spec, ctx) =>
      call(
        'checkpoint',
        true,
        () => fn('checkpoint')(ref, spec, ctx),
        (v) => checkedArtifact(v, who, spec),
      ),
    restore: (ref, artifact, ctx) =>
      call(
        'restore',
        true,
        () => fn('restore')(ref, artifact, ctx),
        (v): ProvisionResult => checkedProvision(v, who),
      ),
    fork: (artifact, spec, ctx) =>
      call(
        'fork',
        true,
        () => fn('fork')(artifact, spec, ctx),
        (v): ProvisionResult => checkedProvision(v, who),
      ),
    verify: (artifact) =>
      call(
        'verify',
        false,
        () => fn('verify')(artifact),
        (v) => {
          const r = v as { ok?: unknown; detail?: unknown } | null;
          if (!r || typeof r !== 'object' || typeof r.ok !== 'boolean') throw broken(who, 'verify', v);
          return { ok: r.ok, ...(typeof r.detail === 'string' ? { detail: r.detail.slice(0, 500) } : {}) };
        },
      ),
    removeCheckpoint: (artifact) => call('removeCheckpoint', false, () => fn('removeCheckpoint')(artifact), none),
    pause: (ref) => call('pause', false, () => fn('pause')(ref), none),
    resume: (ref) => call('resume', false, () => fn('resume')(ref), none),
  };
}
