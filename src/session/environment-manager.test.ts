import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toDisposable } from '../shared/lifecycle.js';
import type { BackendStatus, CreateEnvironmentOptions, SandboxEnvironment, SandboxProvider } from '../sandbox/provider.js';
import type { SandboxRecord } from '../store/sandbox-store.js';
import { Store } from '../store/store.js';
import { thrown } from '../../test/expect-error.js';
import {
  EnvironmentManager,
  type EnvironmentDisposed,
  type EnvironmentManagerOptions,
  type IncarnationChanged,
} from './environment-manager.js';

/**
 * A backend that is only a state machine: its status is whatever the test sets, and every
 * createEnvironment is recorded. The manager's logic needs nothing more (no Docker).
 */
class FakeProvider implements SandboxProvider {
  readonly name = 'fake';
  readonly isContainer = true;
  readonly defaultCwd: string | undefined = '~';
  readonly supportsStreams = true;
  readonly description = 'fake backend for unit tests';
  status_: BackendStatus = { state: 'running', incarnation: 'inc-1' };
  home = '/home/agent';
  created: CreateEnvironmentOptions[] = [];
  async provision() {
    return { backendRef: 'ref', user: 'agent', image: null };
  }
  async start() {}
  async stop() {}
  async remove() {}
  async status(): Promise<BackendStatus> {
    return this.status_;
  }
  async createEnvironment(opts: CreateEnvironmentOptions): Promise<SandboxEnvironment> {
    this.created.push(opts);
    const incarnation = this.status_.incarnation ?? 'none';
    const home = this.home;
    return {
      user: 'agent',
      home,
      defaultCwd: opts.cwd === '~' ? home : opts.cwd,
      cwd: null,
      mounts: [],
      incarnation,
      execPrefix: () => [],
      getTempDir: () => '/tmp',
    };
  }
}

function record(name: string, over: Partial<SandboxRecord> = {}): SandboxRecord {
  return {
    name,
    backend: 'fake',
    image: null,
    user: 'agent',
    declaredDefaultCwd: null,
    backendRef: 'ref',
    mounts: [],
    env: {},
    options: {},
    createdAt: '2026-01-01T00:00:00.000Z',
    home: null,
    homeIncarnation: null,
    lastObservedCwd: null,
    lastObservedAt: null,
    ...over,
  };
}

describe('EnvironmentManager (fake provider, real SQLite store)', () => {
  let dir: string;
  let store: Store;
  let provider: FakeProvider;
  let envs: EnvironmentManager;
  let disposed: EnvironmentDisposed[];
  let changed: IncarnationChanged[];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sd-envmgr-'));
    store = Store.open(dir);
    provider = new FakeProvider();
    envs = new EnvironmentManager({ sandboxes: store.sandboxes, hostHome: '/home/hostuser' });
    disposed = [];
    changed = [];
    envs.onEnvironmentDisposed((e) => disposed.push(e));
    envs.onIncarnationChanged((e) => changed.push(e));
  });
  afterEach(() => {
    envs.dispose();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('connects once, caches the environment, and stores the measured home with its incarnation', async () => {
    const rec = record('a');
    store.sandboxes.insert(rec);
    const env = await envs.environmentFor(rec, provider, false);
    expect(await envs.environmentFor(rec, provider, false)).toBe(env);
    expect(await envs.environmentFor(rec, provider, true)).toBe(env);
    expect(provider.created).toHaveLength(1);
    expect(store.sandboxes.get('a')).toMatchObject({ home: '/home/agent', homeIncarnation: 'inc-1' });
    expect(changed).toEqual([{ sandbox: 'a', previous: null, current: 'inc-1' }]);
  });

  it('two callers connecting at once share one connect (no orphaned incarnation store)', async () => {
    const rec = record('a');
    store.sandboxes.insert(rec);
    const [x, y] = await Promise.all([envs.environmentFor(rec, provider, false), envs.environmentFor(rec, provider, false)]);
    expect(x).toBe(y);
    expect(provider.created).toHaveLength(1);
  });

  it('a changed incarnation disposes the old store, then connects to the new one', async () => {
    const rec = record('a');
    store.sandboxes.insert(rec);
    const old = await envs.environmentFor(rec, provider, false);
    const ended: string[] = [];
    envs.scopeOf(old)!.add(toDisposable(() => ended.push('forward of inc-1')));

    provider.status_ = { state: 'running', incarnation: 'inc-2' };
    const fresh = await envs.environmentFor(rec, provider, false);
    expect(fresh).not.toBe(old);
    expect(fresh.incarnation).toBe('inc-2');
    expect(ended).toEqual(['forward of inc-1']);
    expect(disposed).toEqual([{ sandbox: 'a', incarnation: 'inc-1', reason: 'changed' }]);
    expect(changed.at(-1)).toEqual({ sandbox: 'a', previous: 'inc-1', current: 'inc-2' });
    expect(store.sandboxes.get('a')).toMatchObject({ home: '/home/agent', homeIncarnation: 'inc-2' });
    // Something that arrives late for the old incarnation is ended at once, never leaked.
    let late = false;
    envs.scopeOf(old)!.add(toDisposable(() => (late = true)));
    expect(late).toBe(true);
    expect(envs.scopeOf(fresh)!.isDisposed).toBe(false);
  });

  it('a fast lookup uses the cache without asking the backend; a full one notices the change', async () => {
    const rec = record('a');
    store.sandboxes.insert(rec);
    const old = await envs.environmentFor(rec, provider, false);
    provider.status_ = { state: 'running', incarnation: 'inc-2' };
    expect(await envs.environmentFor(rec, provider, true)).toBe(old);
    expect((await envs.environmentFor(rec, provider, false)).incarnation).toBe('inc-2');
  });

  it('a missing sandbox: sandbox_missing with what to do, and its environment disposed', async () => {
    const rec = record('gone');
    store.sandboxes.insert(rec);
    const env = await envs.environmentFor(rec, provider, false);
    provider.status_ = { state: 'missing', incarnation: null, detail: 'removed outside Sandbox Desk' };
    await expect(envs.environmentFor(rec, provider, false)).rejects.toMatchObject({
      code: 'sandbox_missing',
      message: 'sandbox gone is gone: removed outside Sandbox Desk',
      hint: expect.stringContaining('sandbox-desk sandbox rm gone'),
    });
    expect(envs.scopeOf(env)!.isDisposed).toBe(true);
    expect(envs.cached('gone')).toBeUndefined();
    expect(disposed).toEqual([{ sandbox: 'gone', incarnation: 'inc-1', reason: 'missing' }]);
  });

  it('a stopped sandbox: sandbox_not_running with the start command, and its environment disposed', async () => {
    const rec = record('s');
    store.sandboxes.insert(rec);
    const env = await envs.environmentFor(rec, provider, false);
    provider.status_ = { state: 'stopped', incarnation: null, detail: 'exited (0)' };
    await expect(envs.environmentFor(rec, provider, false)).rejects.toMatchObject({
      code: 'sandbox_not_running',
      message: 'sandbox s is not running (exited (0))',
      hint: 'start it with `sandbox-desk sandbox start s`',
    });
    expect(envs.scopeOf(env)!.isDisposed).toBe(true);
    expect(disposed.map((d) => d.reason)).toEqual(['stopped']);
    // Never connected while stopped.
    expect(provider.created).toHaveLength(1);
  });

  it("observe: a status from a listing ends a stopped or restarted sandbox's environment", async () => {
    const rec = record('o');
    store.sandboxes.insert(rec);
    await envs.environmentFor(rec, provider, false);
    envs.observe('o', { state: 'running', incarnation: 'inc-1' });
    expect(envs.cached('o')).toBeDefined();
    envs.observe('o', { state: 'running', incarnation: 'inc-9' });
    expect(envs.cached('o')).toBeUndefined();
    expect(disposed.map((d) => d.reason)).toEqual(['changed']);
  });

  it('a declared host-path default is dropped at connect, with its warning, and the backend default used', async () => {
    const rec = record('h', { declaredDefaultCwd: '/home/hostuser/project' });
    store.sandboxes.insert(rec);
    const env = await envs.environmentFor(rec, provider, false);
    // Dropped from the record, so the next connect does not repeat it.
    expect(store.sandboxes.get('h')!.declaredDefaultCwd).toBeNull();
    expect(provider.created.map((c) => c.cwd)).toEqual(['/home/hostuser/project', '~']);
    expect(env.defaultCwd).toBe('/home/agent');
    const warnings = envs.takeWarnings('h');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ code: 'default_cwd_ignored' });
    expect(warnings[0]!.message).toContain('/home/hostuser/project');
    expect(envs.takeWarnings('h')).toEqual([]);
    expect(envs.declaredAfterConnect(rec, provider)).toEqual({ value: '~' });
  });

  it("a declared default under the sandbox's own home is kept", async () => {
    const rec = record('k', { declaredDefaultCwd: '/home/agent/work' });
    store.sandboxes.insert(rec);
    const env = await envs.environmentFor(rec, provider, false);
    expect(env.defaultCwd).toBe('/home/agent/work');
    expect(store.sandboxes.get('k')!.declaredDefaultCwd).toBe('/home/agent/work');
    expect(envs.takeWarnings('k')).toEqual([]);
  });

  it('forget (removed) and dispose (closing) end every incarnation with their reason', async () => {
    const a = record('a');
    const b = record('b');
    store.sandboxes.insert(a);
    store.sandboxes.insert(b);
    await envs.environmentFor(a, provider, false);
    await envs.environmentFor(b, provider, false);
    envs.addWarning('a', { code: 'default_cwd_ignored', message: 'x' });
    envs.forget('a');
    expect(envs.takeWarnings('a')).toEqual([]);
    envs.dispose();
    expect(disposed.map((d) => `${d.sandbox}:${d.reason}`)).toEqual(['a:removed', 'b:closed']);
  });
});

describe('declareDefaultCwd: what the user typed', () => {
  const m = new EnvironmentManager({ sandboxes: null as unknown as EnvironmentManagerOptions['sandboxes'], hostHome: '/home/me' });
  const provider = new FakeProvider();

  it.each([
    ['projects/x', '/projects/x'],
    ['./x', '/x'],
    ['~/src', '/home/USER/src'],
    ['.', '/.'],
  ])('refuses the relative %j with invalid_input, saying to give an absolute path or ~', (asked, like) => {
    const err = thrown(() => m.declareDefaultCwd(provider, asked, []));
    expect(err.code).toBe('invalid_input');
    expect(err.oneLine()).toBe(
      `default cwd ${JSON.stringify(asked)} is relative — give an absolute in-sandbox path (such as ${like}), or ~ for the sandbox user's home`,
    );
  });

  it('keeps an absolute path and ~ as typed, without a warning', () => {
    const warnings: unknown[] = [];
    expect(m.declareDefaultCwd(provider, '/work/app', warnings as never)).toBe('/work/app');
    expect(m.declareDefaultCwd(provider, '~', warnings as never)).toBe('~');
    expect(warnings).toEqual([]);
  });

  it('a host-shaped absolute path stays accepted with a warning (decided once the home is measured)', () => {
    const warnings: { code: string }[] = [];
    expect(m.declareDefaultCwd(provider, '/Users/me/project', warnings as never)).toBeNull();
    expect(warnings.map((w) => w.code)).toEqual(['default_cwd_ignored']);
  });
});
