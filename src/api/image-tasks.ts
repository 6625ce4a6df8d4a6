import { randomBytes } from 'node:crypto';
import { asSandboxDeskError, SandboxDeskError } from '../shared/errors.js';
import type { ImageTask, ImageTaskEvent } from '../shared/image-types.js';
import { Emitter, type Event, type IDisposable } from '../shared/lifecycle.js';

/** Events kept per task: a whole Dockerfile's steps and the tail of their output; older ones are dropped and counted. */
const MAX_EVENTS = 2000;
/** Finished tasks kept for clients that poll after the end. */
const MAX_FINISHED = 20;

export type TaskEvent = Omit<ImageTaskEvent, 'at'>;

export interface TaskRun {
  /** Aborted by `cancel` (the window's Cancel) or by the caller's own signal (the CLI's Ctrl-C). */
  signal: AbortSignal;
  emit: (e: TaskEvent) => void;
}

/**
 * The builds and pulls this core runs: each one is a task with its events (bounded), state and result,
 * polled by id from the window and listened to by the CLI; `cancel` aborts its work. Disposing
 * cancels whatever still runs.
 */
export class ImageTasks implements IDisposable {
  private readonly tasks = new Map<string, { task: ImageTask; abort: AbortController }>();
  private readonly changed = new Emitter<ImageTask>();
  /** Fires when a task starts, makes progress and ends (the pushed task list follows it). */
  readonly onTaskChange: Event<ImageTask> = this.changed.event;

  /**
   * Runs `work` as a new task. Returns at once with the task (for clients that poll) and the promise
   * of its end (for the caller that waits).
   */
  start(
    kind: ImageTask['kind'],
    target: string,
    work: (run: TaskRun) => Promise<{ ref: string; id: string | null }>,
    opts: { signal?: AbortSignal; onEvent?: (e: ImageTaskEvent) => void } = {},
  ): { task: ImageTask; done: Promise<ImageTask> } {
    const abort = new AbortController();
    const onOuter = (): void => abort.abort();
    if (opts.signal?.aborted) abort.abort();
    opts.signal?.addEventListener('abort', onOuter, { once: true });
    const task: ImageTask = {
      id: randomBytes(8).toString('hex'),
      kind,
      target,
      startedAt: new Date().toISOString(),
      events: [],
      dropped: 0,
      state: 'running',
      error: null,
      result: null,
    };
    this.tasks.set(task.id, { task, abort });
    this.prune();
    const emit = (e: TaskEvent): void => {
      const event: ImageTaskEvent = { at: new Date().toISOString(), ...e };
      task.events.push(event);
      if (task.events.length > MAX_EVENTS) {
        task.events.shift();
        task.dropped++;
      }
      try {
        opts.onEvent?.(event);
      } catch {
        // A listener's failure (a closed pipe) must not break the build it watches.
      }
      this.changed.fire(task);
    };
    this.changed.fire(task);
    const done = (async () => {
      try {
        task.result = await work({ signal: abort.signal, emit });
        task.state = 'succeeded';
        emit({ kind: 'done', text: `made ${task.result.ref}` });
      } catch (err) {
        const e = abort.signal.aborted
          ? new SandboxDeskError('cancelled', `${target}: cancelled; nothing was tagged`)
          : asSandboxDeskError(err);
        task.state = e.code === 'cancelled' ? 'cancelled' : 'failed';
        task.error = e.toJSON();
      } finally {
        opts.signal?.removeEventListener('abort', onOuter);
      }
      this.changed.fire(task);
      return task;
    })();
    return { task, done };
  }

  get(id: string): ImageTask {
    const t = this.tasks.get(id);
    if (!t) throw new SandboxDeskError('not_found', `no image task ${id}`, { hint: 'tasks are kept while the app runs; see `imageTasks`' });
    return t.task;
  }

  list(): ImageTask[] {
    return [...this.tasks.values()].map((t) => t.task);
  }

  /** Aborts a running task (its work stops and tags nothing); a finished one is left as it is. */
  cancel(id: string): ImageTask {
    const t = this.tasks.get(id);
    if (!t) throw new SandboxDeskError('not_found', `no image task ${id}`);
    if (t.task.state === 'running') t.abort.abort();
    return t.task;
  }

  private prune(): void {
    const finished = [...this.tasks.values()].filter((t) => t.task.state !== 'running');
    for (const t of finished.slice(0, Math.max(0, finished.length - MAX_FINISHED))) this.tasks.delete(t.task.id);
  }

  dispose(): void {
    for (const t of this.tasks.values()) if (t.task.state === 'running') t.abort.abort();
  }
}
