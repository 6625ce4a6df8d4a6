import type { ExecWarning } from '../shared/exec-result.js';
import type { LifecycleContext, ProgressEvent } from '../sandbox/provider.js';
import type { SandboxOperation } from './contract.js';

/** Events kept per operation: enough for any boot's story, bounded for a backend that chatters. */
const MAX_EVENTS = 200;

/**
 * The latest long operation (create, start, stop) of each sandbox with its progress, for clients
 * that poll (the UI) as well as the caller that listens (the CLI). Warning events are also handed
 * to `onWarning`, so they reach the next result as warnings.
 */
export class SandboxOperations {
  private readonly latest = new Map<string, SandboxOperation>();

  constructor(private readonly onWarning: (sandbox: string, warning: ExecWarning) => void) {}

  /** Runs `work` as the sandbox's current operation, recording its progress, its end and its error. */
  async run<T>(
    sandbox: string,
    kind: SandboxOperation['kind'],
    listener: ((e: ProgressEvent) => void) | undefined,
    work: (ctx: LifecycleContext) => Promise<T>,
  ): Promise<T> {
    const op: SandboxOperation = { kind, startedAt: new Date().toISOString(), events: [], done: false, error: null };
    this.latest.set(sandbox, op);
    const progress = (e: ProgressEvent): void => {
      const event = {
        step: String(e.step),
        message: String(e.message),
        level: e.level === 'warning' ? ('warning' as const) : ('info' as const),
        at: new Date().toISOString(),
      };
      op.events.push(event);
      if (op.events.length > MAX_EVENTS) op.events.splice(0, op.events.length - MAX_EVENTS);
      if (event.level === 'warning') this.onWarning(sandbox, { code: 'backend_warning', message: event.message });
      try {
        listener?.(event);
      } catch {
        // A listener's failure (e.g. a closed stream) must not abort the boot it is watching.
      }
    };
    try {
      return await work({ progress });
    } catch (err) {
      op.error = err instanceof Error ? err.message : String(err);
      throw err;
    } finally {
      op.done = true;
    }
  }

  get(sandbox: string): SandboxOperation | null {
    return this.latest.get(sandbox) ?? null;
  }
}
