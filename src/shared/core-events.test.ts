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
