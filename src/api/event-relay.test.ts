import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CoreEventBus, type CoreEvent } from '../shared/core-events.js';
import { Store } from '../store/store.js';
import { EventRelay } from './event-relay.js';
import { publishStoreChanges } from './store-events.js';

/** Two "processes" on one data directory: each its own database connection, bus and relay. */
let dir: string;
let a: { store: Store; bus: CoreEventBus; relay: EventRelay };
let b: { store: Store; bus: CoreEventBus; relay: EventRelay };
const open = () => {
  const store = Store.open(dir);
  const bus = new CoreEventBus();
  publishStoreChanges(store.changes, bus);
  return { store, bus, relay: new EventRelay({ bus, journal: store.journal, pollMs: 5 }) };
};
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sdesk-relay-'));
  a = open();
  b = open();
});
afterEach(() => {
  for (const p of [a, b]) {
    p.relay.dispose();
    p.store.close();
  }
  rmSync(dir, { recursive: true, force: true });
});

const RECORD = {
  name: 'box',
  backend: 'local',
  image: null,
  user: null,
  declaredDefaultCwd: null,
  backendRef: null,
  mounts: [],
  env: {},
  options: {},
  createdAt: '2026-01-01T00:00:00.000Z',
  home: null,
  homeIncarnation: null,
  lastObservedCwd: null,
  lastObservedAt: null,
} as never;

const until = async (cond: () => boolean) => {
  for (let i = 0; i < 400 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(cond()).toBe(true);
};

describe('EventRelay', () => {
  it("re-publishes another process's events (marked remote), only while someone listens, never its own back", async () => {
    const seenA: CoreEvent[] = [];
    a.bus.onEvent((e) => seenA.push(e));
    // Nobody listens in A yet: B's event is journalled but A does not tail.
    b.bus.publish({ topic: 'sandbox', sandbox: 'early', reason: 'created' });
    await new Promise((r) => setTimeout(r, 30));
    expect(seenA).toEqual([]);

    const listening = a.bus.listen();
    b.bus.publish({ topic: 'operation', operation: { id: 'op1', kind: 'create' } as never });
    await until(() => seenA.length === 1);
    expect(seenA[0]).toMatchObject({ topic: 'operation', remote: true, operation: { id: 'op1' } });

    // A's own events are not relayed back to A (they are not doubled), and B does not listen.
    a.bus.publish({ topic: 'sandbox', sandbox: 'mine', reason: 'created' });
    await new Promise((r) => setTimeout(r, 30));
    expect(seenA.filter((e) => e.topic === 'sandbox' && e.sandbox === 'mine')).toHaveLength(1);
    listening.dispose();
  });

  it("a process's own stats samples stay in it: never journalled, never seen by another", async () => {
    const seenA: CoreEvent[] = [];
    a.bus.onEvent((e) => seenA.push(e));
    const listening = a.bus.listen();
    b.bus.publish({ topic: 'stats', sandbox: 'box', cpuPercent: 50, memoryBytes: 1, memoryLimitBytes: null });
    b.bus.publish({ topic: 'sandbox', sandbox: 'after', reason: 'created' });
    await until(() => seenA.length === 1);
    await new Promise((r) => setTimeout(r, 30));
    expect(seenA.map((e) => e.topic)).toEqual(['sandbox']);
    listening.dispose();
  });

  it("a session record another process writes (a CLI's `cd /tmp`) reaches the listening one", async () => {
    const listening = a.bus.listen();
    const seenA: CoreEvent[] = [];
    a.bus.onEvent((e) => seenA.push(e));
    b.store.sandboxes.insert(RECORD);
    b.store.sessions.ensure('box', 'k', { parent: null, cwd: null, at: 'x' });
    b.store.sessions.recordObserved('box', 'k', '/tmp', 'y');
    await until(() => seenA.some((e) => e.topic === 'session'));
    expect(seenA.filter((e) => e.topic === 'session')[0]).toMatchObject({ sandbox: 'box', session: 'k', remote: true });
    listening.dispose();
  });

  it('a change with no journal row (another build) becomes a `store` event: re-read everything', async () => {
    const listening = a.bus.listen();
    const seenA: CoreEvent[] = [];
    a.bus.onEvent((e) => seenA.push(e));
    b.store.agentTokens.list(); // a read changes nothing
    (b.store as unknown as { db: { exec(sql: string): void } }).db.exec(`INSERT INTO meta (key, value) VALUES ('x', 'y')`);
    await until(() => seenA.length > 0);
    expect(seenA[0]).toMatchObject({ topic: 'store' });
    listening.dispose();
  });
});
