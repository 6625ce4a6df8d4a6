import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store } from './store.js';

const cwd = { sessions: [], lastObservedCwd: '/home/agent/p', lastObservedAt: '2026-01-01T00:00:00.000Z', declaredDefaultCwd: '~' };
const source = { image: 'img', user: 'agent', options: { cpus: '2' } };

describe('CheckpointStore', () => {
  let dir: string;
  let store: Store;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sd-cps-'));
    store = Store.open(dir);
  });
  afterEach(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a saving record is never listed; ready with its artifact it is, newest first', () => {
    const base = { sandbox: 's', backend: 'docker', label: null, memory: false, cwd, source };
    store.checkpoints.insertSaving({ ...base, id: 'a', createdAt: '2026-01-01T00:00:00.000Z' });
    store.checkpoints.insertSaving({ ...base, id: 'b', createdAt: '2026-01-02T00:00:00.000Z' });
    expect(store.checkpoints.listReady()).toEqual([]);
    expect(store.checkpoints.listSaving().map((r) => [r.id, r.ownerPid])).toEqual([
      ['a', process.pid],
      ['b', process.pid],
    ]);
    store.checkpoints.markReady('a', { ref: 'img:a', memory: false, sizeBytes: 7 });
    store.checkpoints.markReady('b', { ref: 'img:b', memory: false, sizeBytes: null });
    expect(store.checkpoints.listReady('s').map((r) => r.id)).toEqual(['b', 'a']);
    expect(store.checkpoints.get('a')).toMatchObject({ state: 'ready', sizeBytes: 7, artifact: { ref: 'img:a' }, cwd, source });
    expect(store.checkpoints.listReady('other')).toEqual([]);
    expect(store.checkpoints.delete('a')).toBe(true);
    expect(store.checkpoints.ids()).toEqual(['b']);
  });

  it('sessions are replaced from a checkpoint in one go, marked restored_from', () => {
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
      createdAt: '2026-01-01T00:00:00.000Z',
      home: null,
      homeIncarnation: null,
      lastObservedCwd: null,
      lastObservedAt: null,
    });
    store.sessions.ensure('s', 'old', { parent: null, cwd: '/tmp', at: '2026-01-01T00:00:00.000Z' });
    const saved = { ...store.sessions.ensure('s', 'kept', { parent: null, cwd: '/srv', at: '2026-01-01T00:00:00.000Z' }) };
    store.sessions.replaceFromCheckpoint('s', 'cp1', [saved]);
    expect(store.sessions.list('s')).toEqual([{ ...saved, restoredFrom: 'cp1', lastWarnings: [] }]);
    store.sandboxes.restoreCwdLayers('s', cwd);
    expect(store.sandboxes.get('s')).toMatchObject({ lastObservedCwd: '/home/agent/p', declaredDefaultCwd: '~' });
  });
});
