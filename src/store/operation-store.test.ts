import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { OperationView } from '../shared/core-events.js';
import { Store } from './store.js';

let dir: string;
let store: Store;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sdesk-ops-'));
  store = Store.open(dir);
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

const op = (id: string, over: Partial<OperationView> = {}): OperationView => ({
  id,
  kind: 'create',
  target: 'box',
  sandbox: 'box',
  state: 'running',
  message: null,
  fraction: null,
  error: null,
  startedAt: `2026-01-01T00:00:0${id.length}.000Z`,
  updatedAt: '2026-01-01T00:00:00.000Z',
  pid: process.pid,
  ...over,
});

describe('OperationStore', () => {
  it('keeps one row per operation, updated as it goes; the newest first; another process sees it', () => {
    store.operations.put(op('a'));
    store.operations.put(op('bb', { kind: 'image-build', target: 'my/img:1', sandbox: null }));
    store.operations.put(op('a', { state: 'succeeded', message: 'ready', fraction: 1 }));
    const other = Store.open(dir);
    try {
      expect(other.operations.list().map((o) => [o.id, o.state])).toEqual([
        ['bb', 'running'],
        ['a', 'succeeded'],
      ]);
      expect(other.operations.get('a')).toMatchObject({ message: 'ready', fraction: 1 });
    } finally {
      other.close();
    }
  });

  it('marks operations of a process that is gone as failed, and leaves live ones alone', () => {
    store.operations.put(op('a', { pid: 999_999_999 }));
    store.operations.put(op('bb'));
    const reaped = store.operations.reapOrphans((pid) => pid === process.pid);
    expect(reaped.map((o) => [o.id, o.state])).toEqual([['a', 'failed']]);
    expect(store.operations.get('a')!.error).toMatch(/ended before it finished/);
    expect(store.operations.get('bb')!.state).toBe('running');
  });
});

describe('StoreChanges', () => {
  it('fires after each write to a shown table, naming the sandbox and session', () => {
    const seen: unknown[] = [];
    store.changes.onChange((c) => seen.push(c));
    store.sandboxes.insert({
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
    });
    store.sessions.ensure('box', 'k', { parent: null, cwd: null, at: '2026-01-01T00:00:00.000Z' });
    store.sessions.recordObserved('box', 'k', '/tmp', '2026-01-01T00:00:01.000Z');
    store.callLog.append({
      at: 'x',
      sandbox: 'box',
      session: 'k',
      tool: 'exec',
      cwdUsed: null,
      cwdObserved: null,
      exitCode: 0,
      warnings: [],
      error: null,
      durationMs: 1,
    });
    expect(seen).toEqual([
      { table: 'sandboxes', sandbox: 'box', what: 'insert' },
      { table: 'sessions', sandbox: 'box', session: 'k' },
      { table: 'sessions', sandbox: 'box', session: 'k' },
      { table: 'call_log', sandbox: 'box', session: 'k' },
    ]);
  });
});
