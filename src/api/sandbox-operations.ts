import { SandboxDeskError } from '../shared/errors.js';
import type { ExecWarning } from '../shared/exec-result.js';
import type { LifecycleContext, ProgressEvent } from '../sandbox/provider.js';
import type { SandboxOperation } from './contract.js';
import type { TrackedOperation } from './operation-tracker.js';

/** Events kept per operation: enough for any boot's story, bounded for a backend that chatters. */
const MAX_EVENTS = 200;

/** The kinds a user can cancel: a stop has already asked the guest to power off and ends on its own. */
const CANCELLABLE: ReadonlySet<SandboxOperation['kind']> = new Set(['create', 'start']);

/** The error a cancelled operation ends with, whatever the provider threw on its way out. */
export function cancelledError(sandbox: string, kind: SandboxOperation['kind']): SandboxDeskError {
  return new SandboxDeskError('cancelled', `the ${kind} of sandbox ${sandbox} was cancelled`, {
    hint:
      kind === 'create'
        ? 'nothing was left behind; create it again when you want it'
        : `start it again with \`sandbox-desk sandbox start ${sandbox}\``,
  });
}

export function isCancelled(err: unknown): boolean {
  return err instanceof SandboxDeskError && err.code === 'cancelled';
}

/**
 * The latest long operation (create, start, stop) of each sandbox with its progress, for clients
 * that poll (the UI) as well as the caller that listens (the CLI). Warning events are also handed
 * to `onWarning`, so they reach the next result as warnings. A create or start can be cancelled
 * (`cancel`, or the caller's own signal): its AbortSignal reaches the provider through
 * `LifecycleContext.signal`, and the operation then ends with the `cancelled` error.
 */
export class SandboxOperations {
  private readonly latest = new Map<string, { op: SandboxOperation; abort: AbortController }>();

  constructor(
    private readonly onWarning: (sandbox: string, warning: ExecWarning) => void,
    /** Persists and publishes each operation (the task list, other processes' windows). */
    private readonly track?: (sandbox: string, kind: SandboxOperation['kind']) => TrackedOperation,
  ) {}

  /** Runs `work` as the sandbox's current operation, recording its progress, its end and its error. */
  async run<T>(
    sandbox: string,
    kind: SandboxOperation['kind'],
    listener: ((e: ProgressEvent) => void) | undefined,
    work: (ctx: LifecycleContext) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    const op: SandboxOperation = {
      kind,
      startedAt: new Date().toISOString(),
      events: [],
      done: false,
      error: null,
      cancellable: CANCELLABLE.has(kind),
      cancelled: false,
    };
    const abort = new AbortController();
    this.latest.set(sandbox, { op, abort });
    const tracked = this.track?.(sandbox, kind);
    const reason = cancelledError(sandbox, kind);
    const onCallerAbort = (): void => this.abort(op, abort, reason);
    if (signal?.aborted) onCallerAbort();
    signal?.addEventListener('abort', onCallerAbort, { once: true });
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
      tracked?.progress(event.message);
      try {
        listener?.(event);
      } catch {
        // A listener's failure (e.g. a closed stream) must not abort the boot it is watching.
      }
    };
    try {
      const result = await work({ progress, signal: abort.signal });
      // A provider that finished its step without looking at the signal: the cancel still wins.
      if (abort.signal.aborted) throw reason;
      tracked?.end();
      return result;
    } catch (err) {
      // Providers end a cancelled boot with their own words ("cancelled while waiting for SSH"): one error for all.
      const final = abort.signal.aborted ? reason : err;
      op.error = final instanceof Error ? final.message : String(final);
      tracked?.end({ code: final instanceof SandboxDeskError ? final.code : undefined, message: op.error });
      throw final;
    } finally {
      signal?.removeEventListener('abort', onCallerAbort);
      op.done = true;
    }
  }

  private abort(op: SandboxOperation, abort: AbortController, reason: SandboxDeskError): void {
    if (op.done || abort.signal.aborted) return;
    op.cancelled = true;
    op.events.push({
      step: 'cancel',
      message: 'cancelling: stopping and removing what was made so far',
      level: 'info',
      at: new Date().toISOString(),
    });
    abort.abort(reason);
  }

  /** Cancels the sandbox's running create or start; refused (with why) when there is none. */
  cancel(sandbox: string): SandboxOperation {
    const cur = this.latest.get(sandbox);
    if (!cur || cur.op.done)
      throw new SandboxDeskError('refused', `nothing to cancel: no create or start of sandbox ${sandbox} is running`, {
        hint: 'it may just have finished; see its state in the list',
      });
    if (!cur.op.cancellable)
      throw new SandboxDeskError('refused', `a ${cur.op.kind} cannot be cancelled once it has begun`, {
        hint: 'the guest was already asked to power off; the stop ends on its own (hard after the stop timeout)',
      });
    this.abort(cur.op, cur.abort, cancelledError(sandbox, cur.op.kind));
    return cur.op;
  }

  get(sandbox: string): SandboxOperation | null {
    return this.latest.get(sandbox)?.op ?? null;
  }

  /** The operation still running on the sandbox, if any. */
  running(sandbox: string): SandboxOperation | null {
    const op = this.get(sandbox);
    return op && !op.done ? op : null;
  }
}
