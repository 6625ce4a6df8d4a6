import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Store } from '../store/store.js';
import { createChildSession } from './session-lineage.js';

describe('createChildSession (real SQLite store)', () => {
  let dir: string;
  let store: Store;
  const AT = '2026-01-01T00:00:00.000Z';
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sd-lineage-'));
    store = Store.open(dir);
    store.sandboxes.insert({
      name: 's',
      backend: 'local',
      image: null,
      user: null,
      declaredDefaultCwd: null,
      backendRef: null,
      mounts: [],
      env: {},
      options: {},
      createdAt: AT,
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

  it("a child takes its parent's record once, at creation; an explicit cwd wins", () => {
    createChildSession(store.sessions, { sandbox: 's', key: 'p' }, AT);
    store.sessions.recordObserved('s', 'p', '/work', AT);
    expect(createChildSession(store.sessions, { sandbox: 's', key: 'c', parent: 'p' }, AT)).toMatchObject({ parent: 'p', cwd: '/work' });
    expect(createChildSession(store.sessions, { sandbox: 's', key: 'e', parent: 'p', cwd: '/etc' }, AT)).toMatchObject({
      parent: 'p',
      cwd: '/etc',
    });
    store.sessions.recordObserved('s', 'p', '/elsewhere', AT);
    expect(store.sessions.get('s', 'c')?.cwd).toBe('/work');
  });

  it('refuses a taken key and a missing parent, saying which', () => {
    createChildSession(store.sessions, { sandbox: 's', key: 'p' }, AT);
    expect(() => createChildSession(store.sessions, { sandbox: 's', key: 'p' })).toThrow(/session "p" already exists in sandbox s/);
    expect(() => createChildSession(store.sessions, { sandbox: 's', key: 'x', parent: 'ghost' })).toThrow(
      /parent session "ghost" does not exist in sandbox s/,
    );
    expect(store.sessions.get('s', 'x')).toBeUndefined();
  });
});
