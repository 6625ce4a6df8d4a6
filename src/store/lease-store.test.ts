import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LeaseChange } from './lease-store.js';
import { Store } from './store.js';

describe('LeaseStore', () => {
  let dir: string;
  let store: Store;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sdesk-lease-'));
    store = Store.open(dir);
    store.sandboxes.insert({
      name: 's',
      backend: 'docker',
      image: null,
      user: null,
      declaredDefaultCwd: null,
      backendRef: null,
      mounts: [],
      env: {},
      options: {},
      createdAt: 'now',
      home: null,
      homeIncarnation: null,
      lastObservedCwd: null,
      lastObservedAt: null,
    });
  });
  afterEach(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the agent holds a lease nobody took', () => {
    expect(store.leases.get('s')).toMatchObject({ holder: 'agent', viewerId: null });
  });

  it('a viewer takes it; the last one to ask wins; only the holder gives it back', () => {
    expect(store.leases.acquire('s', 'v1')).toMatchObject({ holder: 'human', viewerId: 'v1', epoch: 1 });
    expect(store.leases.acquire('s', 'v1').epoch).toBe(1);
    expect(store.leases.acquire('s', 'v2')).toMatchObject({ holder: 'human', viewerId: 'v2', epoch: 2 });
    expect(store.leases.release('s', 'v1')).toMatchObject({ holder: 'human', viewerId: 'v2' });
    expect(store.leases.release('s', 'v2')).toMatchObject({ holder: 'agent', viewerId: null, epoch: 3 });
  });

  it('tells each change of hands, with the lease it replaced; a write that changes nothing tells nothing', () => {
    const seen: LeaseChange[] = [];
    store.leases.onChanged((c) => seen.push(c));
    const taken = store.leases.acquire('s', 'v1');
    store.leases.acquire('s', 'v1'); // the holder asks again
    store.leases.release('s', 'v2'); // a watcher's stream closes
    const handed = store.leases.acquire('s', 'v2');
    const back = store.leases.release('s', 'v2');
    expect(seen.map((c) => [c.sandbox, c.previous.holder, c.previous.viewerId, c.lease.holder, c.lease.viewerId])).toEqual([
      ['s', 'agent', null, 'human', 'v1'],
      ['s', 'human', 'v1', 'human', 'v2'],
      ['s', 'human', 'v2', 'agent', null],
    ]);
    expect(seen.map((c) => c.lease)).toEqual([taken, handed, back]);
  });

  it('persists across a reopen (another process sees it)', () => {
    store.leases.acquire('s', 'v1');
    const other = Store.open(dir);
    expect(other.leases.get('s')).toMatchObject({ holder: 'human', viewerId: 'v1' });
    other.close();
  });

  it('fails closed: an unreadable lease counts as a human holding it', () => {
    const raw = new Database(join(dir, 'state.db'));
    raw.prepare(`INSERT INTO leases (sandbox, holder, viewer_id, epoch, since) VALUES ('s', 'garbage', NULL, 4, 'x')`).run();
    raw.close();
    expect(store.leases.get('s')).toMatchObject({ holder: 'human' });
    expect(store.leases.get('s').reason).toMatch(/failing closed/);
  });

  it('fails closed when the database cannot be read at all', () => {
    store.close();
    expect(store.leases.get('s')).toMatchObject({ holder: 'human' });
  });
});
