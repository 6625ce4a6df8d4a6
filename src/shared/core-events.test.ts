import { describe, expect, it } from 'vitest';
import { CoreEventBus, type CoreEvent } from './core-events.js';

describe('CoreEventBus', () => {
  it('numbers events, stamps their time and delivers them in order', () => {
    const bus = new CoreEventBus();
    const seen: CoreEvent[] = [];
    bus.onEvent((e) => seen.push(e));
    bus.publish({ topic: 'sandbox', sandbox: 'a', reason: 'created' });
    bus.publish({ topic: 'sandbox', sandbox: 'b', reason: 'started', at: '2026-01-01T00:00:00.000Z' });
    expect(seen.map((e) => e.seq)).toEqual([1, 2]);
    expect(Date.parse(seen[0]!.at)).not.toBeNaN();
    expect(seen[1]!.at).toBe('2026-01-01T00:00:00.000Z');
    expect(bus.lastSeq).toBe(2);
  });

  it('publishes nothing after dispose', () => {
    const bus = new CoreEventBus();
    const seen: CoreEvent[] = [];
    bus.onEvent((e) => seen.push(e));
    bus.dispose();
    bus.publish({ topic: 'sandbox', sandbox: 'a', reason: 'created' });
    expect(seen).toEqual([]);
  });
});

describe('CoreEventBus backlog and listeners', () => {
  it('serves what came after a seq from a bounded backlog; null when it is gone or from the future', () => {
    const bus = new CoreEventBus(3);
    for (const s of ['a', 'b', 'c', 'd', 'e']) bus.publish({ topic: 'sandbox', sandbox: s, reason: 'created' });
    expect(bus.since(5)).toEqual([]);
    expect(bus.since(3)!.map((e) => e.seq)).toEqual([4, 5]);
    expect(bus.since(2)!.map((e) => e.seq)).toEqual([3, 4, 5]);
    expect(bus.since(1)).toBeNull(); // 2 fell out of the backlog
    expect(bus.since(9)).toBeNull(); // another bus's seq (the server restarted)
  });

  it('says when the first transport listener comes and the last one goes', () => {
    const bus = new CoreEventBus();
    const seen: boolean[] = [];
    bus.onListening((on) => seen.push(on));
    const a = bus.listen();
    const b = bus.listen();
    expect(bus.listened).toBe(true);
    a.dispose();
    a.dispose(); // twice is once
    expect(seen).toEqual([true]);
    b.dispose();
    expect(seen).toEqual([true, false]);
    expect(bus.listened).toBe(false);
  });
});
