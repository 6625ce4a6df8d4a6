import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store } from './store.js';
import type { SandboxRecord } from './sandbox-store.js';

function sandbox(name: string, over: Partial<SandboxRecord> = {}): SandboxRecord {
  return {
    name,
    backend: 'docker',
    image: 'ubuntu:24.04',
    user: 'agent',
    declaredDefaultCwd: '~',
    typedDefaultCwd: null,
    backendRef: null,
    mounts: [{ hostPath: '/home/me/proj', sandboxPath: '/workspace', readOnly: true }],
    env: { FOO: 'bar' },
    options: { cpus: '2' },
    createdAt: '2025-01-01T00:00:00.000Z',
    home: null,
    homeIncarnation: null,
    lastObservedCwd: null,
    lastObservedAt: null,
    ...over,
  };
}

const AT = '2025-01-02T00:00:00.000Z';

describe('Store', () => {
  let dir: string;
  let store: Store;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sd-store-'));
    store = Store.open(dir);
  });
  afterEach(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function reopen(): Store {
    store.close();
    store = Store.open(dir);
    return store;
  }

  describe('sandboxes', () => {
    it('reads back an inserted sandbox with all its fields', () => {
      const rec = sandbox('s1');
      store.sandboxes.insert(rec);
      expect(store.sandboxes.get('s1')).toEqual(rec);
    });

    it('keeps the default cwd exactly as typed beside the normalised declaration', () => {
      store.sandboxes.insert(sandbox('typed', { declaredDefaultCwd: '/work/src', typedDefaultCwd: '/work//src/' }));
      expect(store.sandboxes.get('typed')).toMatchObject({ declaredDefaultCwd: '/work/src', typedDefaultCwd: '/work//src/' });
    });

    it('returns undefined for an unknown sandbox', () => {
      expect(store.sandboxes.get('nope')).toBeUndefined();
    });

    it('lists sandboxes ordered by creation time, then name', () => {
      store.sandboxes.insert(sandbox('b', { createdAt: '2025-01-01T00:00:00.000Z' }));
      store.sandboxes.insert(sandbox('c', { createdAt: '2024-12-31T00:00:00.000Z' }));
      store.sandboxes.insert(sandbox('a', { createdAt: '2025-01-01T00:00:00.000Z' }));
      expect(store.sandboxes.list().map((s) => s.name)).toEqual(['c', 'a', 'b']);
    });

    it('refuses a second sandbox with the same name', () => {
      store.sandboxes.insert(sandbox('s1'));
      expect(() => store.sandboxes.insert(sandbox('s1'))).toThrow();
    });

    it('updates provisioning, home and last observed cwd', () => {
      store.sandboxes.insert(sandbox('s1'));
      store.sandboxes.setProvisioned('s1', { backendRef: 'abc123', user: 'root', image: 'debian' });
      store.sandboxes.setHome('s1', '/home/agent', 'inc-1');
      store.sandboxes.setLastObservedCwd('s1', '/workspace', AT);
      expect(store.sandboxes.get('s1')).toMatchObject({
        backendRef: 'abc123',
        user: 'root',
        image: 'debian',
        home: '/home/agent',
        homeIncarnation: 'inc-1',
        lastObservedCwd: '/workspace',
        lastObservedAt: AT,
      });
    });

    it('reports whether delete removed anything', () => {
      store.sandboxes.insert(sandbox('s1'));
      expect(store.sandboxes.delete('s1')).toBe(true);
      expect(store.sandboxes.delete('s1')).toBe(false);
      expect(store.sandboxes.get('s1')).toBeUndefined();
    });

    it('deleting a sandbox removes its sessions', () => {
      store.sandboxes.insert(sandbox('s1'));
      store.sandboxes.insert(sandbox('s2'));
      store.sessions.ensure('s1', 'k', { parent: null, cwd: '/a', at: AT });
      store.sessions.ensure('s2', 'k', { parent: null, cwd: '/b', at: AT });
      store.sandboxes.delete('s1');
      expect(store.sessions.get('s1', 'k')).toBeUndefined();
      expect(store.sessions.list('s1')).toEqual([]);
      expect(store.sessions.get('s2', 'k')?.cwd).toBe('/b');
    });
  });

  describe('sessions', () => {
    beforeEach(() => {
      store.sandboxes.insert(sandbox('s1'));
    });

    it('creates a session with a cwd as source "created"', () => {
      const s = store.sessions.ensure('s1', 'k', { parent: 'p', cwd: '/workspace', at: AT });
      expect(s).toEqual({
        sandbox: 's1',
        key: 'k',
        parent: 'p',
        cwd: '/workspace',
        source: 'created',
        observedAt: null,
        createdAt: AT,
        lastWarnings: [],
        restoredFrom: null,
      });
    });

    it('creates a session without a cwd with source null', () => {
      const s = store.sessions.ensure('s1', 'k', { parent: null, cwd: null, at: AT });
      expect(s.cwd).toBeNull();
      expect(s.source).toBeNull();
    });

    it('ensure() leaves an existing session unchanged', () => {
      store.sessions.ensure('s1', 'k', { parent: null, cwd: '/first', at: AT });
      const again = store.sessions.ensure('s1', 'k', { parent: 'other', cwd: '/second', at: '2030-01-01T00:00:00.000Z' });
      expect(again.cwd).toBe('/first');
      expect(again.parent).toBeNull();
      expect(again.createdAt).toBe(AT);
    });

    it('refuses a session of a sandbox that does not exist', () => {
      expect(() => store.sessions.ensure('ghost', 'k', { parent: null, cwd: null, at: AT })).toThrow();
    });

    it('keeps sessions of the same key in different sandboxes apart', () => {
      store.sandboxes.insert(sandbox('s2'));
      store.sessions.ensure('s1', 'k', { parent: null, cwd: '/one', at: AT });
      store.sessions.ensure('s2', 'k', { parent: null, cwd: '/two', at: AT });
      expect(store.sessions.get('s1', 'k')?.cwd).toBe('/one');
      expect(store.sessions.get('s2', 'k')?.cwd).toBe('/two');
    });

    it('recordObserved overwrites the cwd and marks it observed', () => {
      store.sessions.ensure('s1', 'k', { parent: null, cwd: '/created', at: AT });
      store.sessions.recordObserved('s1', 'k', '/observed', '2025-02-02T00:00:00.000Z');
      expect(store.sessions.get('s1', 'k')).toMatchObject({ cwd: '/observed', source: 'observed', observedAt: '2025-02-02T00:00:00.000Z' });
    });

    it('recordObserved does not create a missing session', () => {
      store.sessions.recordObserved('s1', 'ghost', '/x', AT);
      expect(store.sessions.get('s1', 'ghost')).toBeUndefined();
    });

    it('fillIfEmpty fills a session without a cwd and marks it rescued', () => {
      store.sessions.ensure('s1', 'k', { parent: null, cwd: null, at: AT });
      expect(store.sessions.fillIfEmpty('s1', 'k', '/rescued', AT)).toBe(true);
      expect(store.sessions.get('s1', 'k')).toMatchObject({ cwd: '/rescued', source: 'rescued', observedAt: AT });
    });

    it('fillIfEmpty never overwrites an existing cwd and returns false', () => {
      store.sessions.ensure('s1', 'k', { parent: null, cwd: '/mine', at: AT });
      expect(store.sessions.fillIfEmpty('s1', 'k', '/rescued', AT)).toBe(false);
      expect(store.sessions.get('s1', 'k')).toMatchObject({ cwd: '/mine', source: 'created' });
    });

    it('fillIfEmpty fills only once', () => {
      store.sessions.ensure('s1', 'k', { parent: null, cwd: null, at: AT });
      expect(store.sessions.fillIfEmpty('s1', 'k', '/first', AT)).toBe(true);
      expect(store.sessions.fillIfEmpty('s1', 'k', '/second', AT)).toBe(false);
      expect(store.sessions.get('s1', 'k')?.cwd).toBe('/first');
    });

    it('fillIfEmpty returns false for a missing session', () => {
      expect(store.sessions.fillIfEmpty('s1', 'ghost', '/x', AT)).toBe(false);
    });

    it('stores and reads back the last warnings', () => {
      store.sessions.ensure('s1', 'k', { parent: null, cwd: null, at: AT });
      const warnings = [{ code: 'cwd_missing' as const, message: 'gone', asked: '/a', used: '/' }];
      store.sessions.setLastWarnings('s1', 'k', warnings);
      expect(store.sessions.get('s1', 'k')?.lastWarnings).toEqual(warnings);
    });

    it('lists the sessions of a sandbox', () => {
      store.sessions.ensure('s1', 'b', { parent: null, cwd: null, at: AT });
      store.sessions.ensure('s1', 'a', { parent: null, cwd: null, at: AT });
      expect(store.sessions.list('s1').map((s) => s.key)).toEqual(['a', 'b']);
    });

    it('deletes one session', () => {
      store.sessions.ensure('s1', 'k', { parent: null, cwd: null, at: AT });
      expect(store.sessions.delete('s1', 'k')).toBe(true);
      expect(store.sessions.delete('s1', 'k')).toBe(false);
    });

    it.each([
      ['a slash', 'a/b'],
      ['SQL', "'; DROP TABLE sessions;--"],
      ['an emoji', '🚀 session'],
      ['spaces', '  spaced  key  '],
      ['1000 characters', 'k'.repeat(1000)],
      ['a NUL byte', 'nul\0key'],
      ['a newline', 'line\nbreak'],
    ])('stores a key with %s verbatim', (_label, key) => {
      store.sessions.ensure('s1', key, { parent: null, cwd: '/x', at: AT });
      expect(store.sessions.get('s1', key)?.key).toBe(key);
      expect(store.sessions.list('s1').map((s) => s.key)).toEqual([key]);
    });

    it('keeps the sessions table after a key that looks like SQL', () => {
      store.sessions.ensure('s1', "'; DROP TABLE sessions;--", { parent: null, cwd: null, at: AT });
      store.sessions.ensure('s1', 'normal', { parent: null, cwd: null, at: AT });
      expect(store.sessions.list('s1')).toHaveLength(2);
    });

    it('does not collapse keys that differ only in case or whitespace', () => {
      for (const key of ['Key', 'key', 'key ']) store.sessions.ensure('s1', key, { parent: null, cwd: `/${key.trim()}`, at: AT });
      expect(store.sessions.list('s1')).toHaveLength(3);
    });
  });

  describe('persistence', () => {
    it('keeps sandboxes and sessions across close and reopen', () => {
      store.sandboxes.insert(sandbox('s1'));
      store.sessions.ensure('s1', 'k', { parent: null, cwd: '/w', at: AT });
      store.sessions.recordObserved('s1', 'k', '/w/sub', AT);
      reopen();
      expect(store.sandboxes.get('s1')).toEqual(sandbox('s1'));
      expect(store.sessions.get('s1', 'k')).toMatchObject({ cwd: '/w/sub', source: 'observed' });
    });

    it('keeps the instance id across reopen', () => {
      const id = store.instanceId;
      reopen();
      expect(store.instanceId).toBe(id);
    });

    it('makes the instance id 6 hex characters', () => {
      expect(store.instanceId).toMatch(/^[0-9a-f]{6}$/);
    });

    it('gives two data directories (almost surely) different instance ids', () => {
      const other = mkdtempSync(join(tmpdir(), 'sd-store-'));
      const ids = new Set<string>([store.instanceId]);
      try {
        const s2 = Store.open(other);
        ids.add(s2.instanceId);
        s2.close();
      } finally {
        rmSync(other, { recursive: true, force: true });
      }
      // 1 in 16.7 million chance of a collision.
      expect(ids.size).toBe(2);
    });

    it('remembers the data directory', () => {
      expect(store.dataDir).toBe(dir);
    });

    it('creates a data directory that does not exist yet', () => {
      const nested = join(dir, 'a', 'b');
      const s2 = Store.open(nested);
      try {
        expect(s2.instanceId).toMatch(/^[0-9a-f]{6}$/);
      } finally {
        s2.close();
      }
    });

    it('close() twice does not throw', () => {
      store.close();
      expect(() => store.close()).not.toThrow();
    });
  });

  describe('transaction', () => {
    it('returns the value of the function and commits its writes', () => {
      const v = store.transaction(() => {
        store.sandboxes.insert(sandbox('s1'));
        return 42;
      });
      expect(v).toBe(42);
      expect(store.sandboxes.get('s1')).toBeDefined();
    });

    it('commits nothing when the function throws, and rethrows', () => {
      store.sandboxes.insert(sandbox('s0'));
      expect(() =>
        store.transaction(() => {
          store.sandboxes.insert(sandbox('s1'));
          store.sessions.ensure('s0', 'k', { parent: null, cwd: '/x', at: AT });
          store.sandboxes.setHome('s0', '/home/x', 'i');
          throw new Error('abort');
        }),
      ).toThrow('abort');
      expect(store.sandboxes.get('s1')).toBeUndefined();
      expect(store.sessions.get('s0', 'k')).toBeUndefined();
      expect(store.sandboxes.get('s0')?.home).toBeNull();
    });

    it('leaves nothing behind after reopen when the function threw', () => {
      expect(() =>
        store.transaction(() => {
          store.sandboxes.insert(sandbox('s1'));
          throw new Error('abort');
        }),
      ).toThrow();
      reopen();
      expect(store.sandboxes.list()).toEqual([]);
    });
  });
});
