/**
 * One lifecycle vocabulary for the whole core (after VS Code's `base/common/lifecycle.ts` and
 * `event.ts`): whatever holds a resource is an `IDisposable`, whatever owns several holds them in a
 * `DisposableStore`, and the one verb that ends anything is `dispose()`. Events are typed functions that
 * return the subscription as a disposable, so a listener is released the same way as everything else.
 *
 * No Node imports: the renderer may use this too.
 */

export interface IDisposable {
  dispose(): void;
}

/** Wraps a teardown function; calling `dispose` more than once runs it once. */
export function toDisposable(fn: () => void): IDisposable {
  let done = false;
  return {
    dispose() {
      if (done) return;
      done = true;
      fn();
    },
  };
}

/** Disposes each; one throwing does not stop the others (the first error is rethrown after all ran). */
export function disposeAll(items: Iterable<IDisposable>): void {
  let first: unknown;
  let failed = false;
  for (const d of items) {
    try {
      d.dispose();
    } catch (err) {
      if (!failed) first = err;
      failed = true;
    }
  }
  if (failed) throw first;
}

/**
 * A set of disposables disposed together, newest first. Once disposed it stays disposed: anything added
 * afterwards is disposed at once (so a resource that arrives late, e.g. a connection finishing after
 * its sandbox stopped, is never leaked).
 */
export class DisposableStore implements IDisposable {
  private readonly items = new Set<IDisposable>();
  private disposedFlag = false;

  get isDisposed(): boolean {
    return this.disposedFlag;
  }

  get size(): number {
    return this.items.size;
  }

  add<T extends IDisposable>(item: T): T {
    if (this.disposedFlag) {
      item.dispose();
      return item;
    }
    this.items.add(item);
    return item;
  }

  /** Forget an item without disposing it (it ended by itself). */
  delete(item: IDisposable): void {
    this.items.delete(item);
  }

  /** Dispose everything held so far; the store stays usable. */
  clear(): void {
    const items = [...this.items].reverse();
    this.items.clear();
    disposeAll(items);
  }

  dispose(): void {
    if (this.disposedFlag) return;
    this.disposedFlag = true;
    this.clear();
  }
}

/** Base class: `this.register(x)` ties x's life to this object's. */
export abstract class Disposable implements IDisposable {
  protected readonly store = new DisposableStore();

  protected register<T extends IDisposable>(item: T): T {
    return this.store.add(item);
  }

  get isDisposed(): boolean {
    return this.store.isDisposed;
  }

  dispose(): void {
    this.store.dispose();
  }
}

/** Subscribe with a listener; the returned disposable unsubscribes. */
export type Event<T> = (listener: (value: T) => void) => IDisposable;

export const Event = {
  /** An event that never fires. */
  None: (() => toDisposable(() => {})) as Event<never>,

  /** Resolves with the next value of `event`. */
  toPromise<T>(event: Event<T>): Promise<T> {
    return new Promise((resolve) => {
      const sub = event((value) => {
        sub.dispose();
        resolve(value);
      });
    });
  },
};

/**
 * The owner's side of an event: `fire` delivers to every listener, in subscription order. A listener
 * that throws does not stop the others; its error goes to `onListenerError` (default: report it
 * asynchronously, so it surfaces without unwinding the code that fired). After `dispose`, `fire` does
 * nothing and subscribing returns an inert disposable.
 */
export class Emitter<T> implements IDisposable {
  private listeners: Array<(value: T) => void> = [];
  private disposedFlag = false;

  constructor(private readonly onListenerError: (err: unknown) => void = reportLater) {}

  readonly event: Event<T> = (listener) => {
    if (this.disposedFlag) return toDisposable(() => {});
    this.listeners.push(listener);
    return toDisposable(() => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    });
  };

  get hasListeners(): boolean {
    return this.listeners.length > 0;
  }

  fire(value: T): void {
    if (this.disposedFlag) return;
    for (const listener of [...this.listeners]) {
      try {
        listener(value);
      } catch (err) {
        this.onListenerError(err);
      }
    }
  }

  dispose(): void {
    this.disposedFlag = true;
    this.listeners = [];
  }
}

function reportLater(err: unknown): void {
  queueMicrotask(() => {
    throw err;
  });
}
