import { describe, expect, it } from 'vitest';
import { Disposable, DisposableStore, Emitter, Event, disposeAll, toDisposable } from './lifecycle.js';

describe('toDisposable', () => {
  it('runs its teardown once', () => {
    let n = 0;
    const d = toDisposable(() => n++);
    d.dispose();
    d.dispose();
    expect(n).toBe(1);
  });
});

describe('disposeAll', () => {
  it('disposes every item even when one throws, then rethrows the first error', () => {
    const seen: string[] = [];
    const items = [
      toDisposable(() => seen.push('a')),
      toDisposable(() => {
        throw new Error('b broke');
      }),
      toDisposable(() => seen.push('c')),
    ];
    expect(() => disposeAll(items)).toThrow('b broke');
    expect(seen).toEqual(['a', 'c']);
  });
});

describe('DisposableStore', () => {
  it('disposes newest first, and disposes late additions at once', () => {
    const seen: string[] = [];
    const store = new DisposableStore();
    store.add(toDisposable(() => seen.push('first')));
    store.add(toDisposable(() => seen.push('second')));
    store.dispose();
    expect(seen).toEqual(['second', 'first']);
    expect(store.isDisposed).toBe(true);
    store.add(toDisposable(() => seen.push('late')));
    expect(seen).toEqual(['second', 'first', 'late']);
    expect(store.size).toBe(0);
  });

  it('clear disposes what it holds and stays usable; delete forgets without disposing', () => {
    let cleared = 0;
    let kept = 0;
    const store = new DisposableStore();
    store.add(toDisposable(() => cleared++));
    store.clear();
    expect(cleared).toBe(1);
    const d = store.add(toDisposable(() => kept++));
    store.delete(d);
    store.dispose();
    expect(kept).toBe(0);
  });
});

describe('Disposable', () => {
  it('disposes what it registered', () => {
    let n = 0;
    class Holder extends Disposable {
      constructor() {
        super();
        this.register(toDisposable(() => n++));
      }
    }
    const h = new Holder();
    expect(h.isDisposed).toBe(false);
    h.dispose();
    expect(h.isDisposed).toBe(true);
    expect(n).toBe(1);
  });
});

describe('Emitter', () => {
  it('delivers in order, unsubscribes, and goes quiet after dispose', () => {
    const e = new Emitter<number>();
    const got: string[] = [];
    const a = e.event((v) => got.push(`a${v}`));
    e.event((v) => got.push(`b${v}`));
    e.fire(1);
    a.dispose();
    e.fire(2);
    e.dispose();
    e.fire(3);
    expect(got).toEqual(['a1', 'b1', 'b2']);
    expect(e.hasListeners).toBe(false);
  });

  it('a listener that throws does not stop the others', () => {
    const errors: unknown[] = [];
    const e = new Emitter<string>((err) => errors.push(err));
    const got: string[] = [];
    e.event(() => {
      throw new Error('bad listener');
    });
    e.event((v) => got.push(v));
    e.fire('x');
    expect(got).toEqual(['x']);
    expect(String(errors[0])).toContain('bad listener');
  });

  it('Event.toPromise resolves with the next value', async () => {
    const e = new Emitter<string>();
    const p = Event.toPromise(e.event);
    e.fire('done');
    await expect(p).resolves.toBe('done');
    expect(e.hasListeners).toBe(false);
  });
});
