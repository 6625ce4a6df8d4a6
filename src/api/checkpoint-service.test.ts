import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rejectsWith } from '../../test/expect-error.js';
import { SandboxDeskError } from '../shared/errors.js';
import { LocalProvider } from '../sandbox/local/local-provider.js';
import type {
  BackendStatus,
  CheckpointArtifact,
  CheckpointCapability,
  CheckpointSpec,
  CreateEnvironmentOptions,
  LifecycleContext,
  ProvisionResult,
  ProvisionSpec,
  SandboxEnvironment,
  SandboxProvider,
  SandboxRef,
} from '../sandbox/provider.js';
import { ProviderRegistry } from '../sandbox/registry.js';
import type { CoreEvent } from '../shared/core-events.js';
import { SandboxDesk } from './sandbox-desk.js';
import { useHermeticHome } from '../../test/hermetic-home.js';

useHermeticHome();

/**
 * A backend whose "disk" is one host folder per sandbox and whose commands run on the host (like the
 * local backend): real shells and real directories, with checkpoints that copy the folder. Each
 * restore or fork is a new incarnation. `failAfterWrite` makes the next checkpoint write part of its
 * files and then fail like a full disk.
 */
class FolderProvider implements SandboxProvider {
  readonly name = 'folder';
  readonly isContainer = false;
  readonly defaultCwd = undefined;
  readonly supportsStreams = true;
  readonly description = 'test: a host folder per sandbox';
  readonly local = new LocalProvider();
  readonly incarnations = new Map<string, number>();
  readonly state = new Map<string, BackendStatus['state']>();
  readonly removed: string[] = [];
  failAfterWrite = false;
  /** A fork of this name fails (after its folder was made), like a backend that ran out of room. */
  failForkOf: string | null = null;
  memory: { supported: boolean; reason?: string } = { supported: false, reason: 'folders have no memory' };
  checkpoints: CheckpointCapability | undefined;

  constructor(readonly roots: string) {
    this.checkpoints = {
      memorySupport: async () => this.memory,
      checkpoint: async (ref: SandboxRef, spec: CheckpointSpec, ctx?: LifecycleContext): Promise<CheckpointArtifact> => {
        ctx?.progress?.({ step: 'copy', message: 'copying the folder' });
        cpSync(this.root(ref.name), join(spec.dir, 'disk'), { recursive: true });
        if (this.failAfterWrite) {
          this.failAfterWrite = false;
          throw new SandboxDeskError('backend_unavailable', 'ENOSPC: no space left on device');
        }
        return { ref: join(spec.dir, 'disk'), memory: false, sizeBytes: 42 };
      },
      restore: async (ref: SandboxRef, a: CheckpointArtifact): Promise<ProvisionResult> => {
        rmSync(this.root(ref.name), { recursive: true, force: true });
        cpSync(a.ref, this.root(ref.name), { recursive: true });
        this.bump(ref.name);
        return { backendRef: ref.name, user: ref.user, image: null };
      },
      fork: async (a: CheckpointArtifact, spec: ProvisionSpec): Promise<ProvisionResult> => {
        cpSync(a.ref, this.root(spec.name), { recursive: true });
        if (spec.name === this.failForkOf) throw new SandboxDeskError('backend_unavailable', 'no room for another fork');
        this.bump(spec.name);
        return { backendRef: spec.name, user: spec.user, image: null };
      },
      verify: async (a: CheckpointArtifact) => (existsSync(a.ref) ? { ok: true } : { ok: false, detail: `${a.ref} was deleted` }),
      removeCheckpoint: async (a: CheckpointArtifact) => {
        this.removed.push(a.ref);
        if (a.details?.interrupted === true) this.interrupted.push({ details: a.details, dirThere: existsSync(String(a.details.dir)) });
        rmSync(a.ref, { recursive: true, force: true });
      },
      pause: async (ref: SandboxRef) => void this.state.set(ref.name, 'paused'),
      resume: async (ref: SandboxRef) => void this.state.set(ref.name, 'running'),
      removeUnrecorded: async (labels: Record<string, string>, recorded: (id: string) => boolean) => {
        this.sweeps.push({ labels, recorded });
        return [];
      },
    };
  }
  /** What removeUnrecorded was asked, each time. */
  readonly sweeps: Array<{ labels: Record<string, string>; recorded: (id: string) => boolean }> = [];
  /** The interrupted checkpoints' artifacts as removeCheckpoint got them, and whether their folder was still there. */
  readonly interrupted: Array<{ details: CheckpointArtifact['details']; dirThere: boolean }> = [];

  root(name: string): string {
    return join(this.roots, name);
  }
  private bump(name: string): void {
    this.incarnations.set(name, (this.incarnations.get(name) ?? 0) + 1);
  }
  async provision(spec: ProvisionSpec): Promise<ProvisionResult> {
    mkdirSync(this.root(spec.name), { recursive: true });
    return { backendRef: spec.name, user: null, image: null };
  }
  async start(ref: SandboxRef): Promise<void> {
    this.state.set(ref.name, 'running');
  }
  async stop(ref: SandboxRef): Promise<void> {
    this.state.set(ref.name, 'stopped');
  }
  async remove(ref: SandboxRef): Promise<void> {
    rmSync(this.root(ref.name), { recursive: true, force: true });
  }
  async status(ref: SandboxRef): Promise<BackendStatus> {
    const state = this.state.get(ref.name) ?? 'running';
    return { state, incarnation: state === 'stopped' ? null : `${ref.name}#${this.incarnations.get(ref.name) ?? 0}` };
  }
  async createEnvironment(opts: CreateEnvironmentOptions): Promise<SandboxEnvironment> {
    const env = await this.local.createEnvironment(opts);
    const incarnation = (await this.status(opts.sandbox)).incarnation!;
    return Object.assign(Object.create(Object.getPrototypeOf(env) as object) as SandboxEnvironment, env, { incarnation });
  }
}

describe('CheckpointService (a folder backend, real shells)', () => {
  let dir: string;
  let provider: FolderProvider;
  let desk: SandboxDesk;
  let events: CoreEvent[];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sd-cp-'));
    provider = new FolderProvider(join(dir, 'roots'));
    const registry = new ProviderRegistry();
    registry.register(provider);
    registry.registerBuiltin(new LocalProvider());
    desk = new SandboxDesk({ dataDir: join(dir, 'data'), registry, plugins: false });
    events = [];
    desk.events.onEvent((e) => events.push(e));
    await desk.createSandbox({ name: 'src', backend: 'folder', options: { cpus: '2' } });
  });
  afterEach(async () => {
    await desk.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const project = () => join(provider.root('src'), 'project');

  it('restore brings the file back and the next pwd is the project, re-measured (cwdObserved), marked restored_from', async () => {
    mkdirSync(project());
    await desk.exec({ sandbox: 'src', session: 'agent', command: `cd ${project()} && echo kept > file.txt` });
    const progress: string[] = [];
    const { checkpoint } = await desk.checkpoints.checkpoint(
      { sandbox: 'src', label: 'before' },
      { onProgress: (e) => progress.push(e.message) },
    );
    expect(checkpoint).toMatchObject({ sandbox: 'src', label: 'before', memory: false, sizeBytes: 42, broken: false });
    expect(checkpoint.sessions).toEqual([{ key: 'agent', cwd: project() }]);
    expect(progress).toContain('copying the folder');
    expect(events.filter((e) => e.topic === 'checkpoint').map((e) => (e as { phase: string }).phase)).toEqual([
      'saving',
      'saving',
      'ready',
    ]);

    await desk.exec({ sandbox: 'src', session: 'agent', command: `cd / && rm -rf ${project()}` });
    const before = desk.environments.cached('src')!.incarnation;
    const r = await desk.checkpoints.restore('src', checkpoint.id);
    expect(desk.environments.cached('src')!.incarnation).not.toBe(before);
    expect(r.sessions.find((s) => s.key === 'agent')).toMatchObject({ cwd: project(), restoredFrom: checkpoint.id });

    const pwd = await desk.exec({ sandbox: 'src', session: 'agent', command: 'pwd && cat file.txt' });
    expect(pwd.stdout).toBe(`${project()}\nkept\n`);
    expect(pwd.cwdObserved).toBe(true);
    expect(desk.listSessions('src')[0]!.restoredFrom).toBe(checkpoint.id);
  });

  it('restore reopens the open terminals under their ids (scrollback kept) and the session shells, reporting each step and event', async () => {
    mkdirSync(project());
    await desk.exec({ sandbox: 'src', session: 'agent', command: `cd ${project()}` });
    const { terminal } = await desk.io.openTerminal({ sandbox: 'src', session: 'tty', cols: 90, rows: 30 });
    const cwds: string[] = [];
    terminal.onCwd((c) => cwds.push(c));
    terminal.write('echo marker-$((6*7))\r');
    await expect.poll(() => terminal.scrollbackSnapshot().toString(), { timeout: 10_000 }).toContain('marker-42');
    const { checkpoint } = await desk.checkpoints.checkpoint({ sandbox: 'src' });
    events.length = 0;
    const steps: string[] = [];
    const r = await desk.checkpoints.restore('src', checkpoint.id, { onProgress: (e) => steps.push(e.step) });
    expect(r.warnings).toEqual([]);
    expect(steps).toEqual(['sessions', 'terminals']);
    expect(events.filter((e) => e.topic === 'checkpoint').map((e) => (e as { phase: string }).phase)).toEqual(['restoring', 'restored']);
    // The old shell ends with the old incarnation; the same id is back, live, with what it showed before.
    await expect.poll(() => terminal.exited, { timeout: 10_000 }).toBe(true);
    expect(desk.io.listTerminals('src')).toEqual([
      expect.objectContaining({ terminalId: terminal.id, session: 'tty', cols: 90, rows: 30 }),
    ]);
    const back = desk.io.terminal(terminal.id);
    expect(back).not.toBe(terminal);
    expect(back.scrollbackSnapshot().toString()).toContain('marker-42');
    back.write('echo after-$((7*6))\r');
    await expect.poll(() => back.scrollbackSnapshot().toString(), { timeout: 10_000 }).toContain('after-42');
    back.dispose();
    await expect.poll(() => back.exited, { timeout: 10_000 }).toBe(true);
    // The agent session's shell was opened again in the restored sandbox: its next command finds it, no "recreated".
    const pwd = await desk.exec({ sandbox: 'src', session: 'agent', command: 'pwd' });
    expect(pwd.stdout).toBe(`${project()}\n`);
    expect(pwd.warnings.map((w) => w.code)).not.toContain('environment_recreated');
  }, 20_000);

  it('a restore that fails gives the held terminals up: listed gone, not restarting for ever', async () => {
    const { terminal } = await desk.io.openTerminal({ sandbox: 'src', session: 'tty', cols: 80, rows: 24 });
    const { checkpoint } = await desk.checkpoints.checkpoint({ sandbox: 'src' });
    provider.checkpoints!.restore = () => Promise.reject(new SandboxDeskError('backend_unavailable', 'engine gone'));
    await rejectsWith(desk.checkpoints.restore('src', checkpoint.id), 'backend_unavailable');
    await expect.poll(() => terminal.exited, { timeout: 10_000 }).toBe(true);
    expect(desk.io.listTerminals('src')).toEqual([]);
    expect(
      events
        .filter((e) => e.topic === 'checkpoint')
        .map((e) => (e as { phase: string }).phase)
        .slice(-2),
    ).toEqual(['restoring', 'failed']);
  }, 20_000);

  it("the replay: a restore and a fork are events; the restore's own re-measurement (`true`) is not a command", async () => {
    mkdirSync(project());
    await desk.exec({ sandbox: 'src', session: 'agent', command: `cd ${project()}` });
    const { checkpoint } = await desk.checkpoints.checkpoint({ sandbox: 'src', label: 'before' });
    await desk.checkpoints.restore('src', checkpoint.id);
    await desk.checkpoints.fork({ sandbox: 'src', checkpoint: checkpoint.id, as: 'alt', count: 1 });
    const rows = desk.replay.events('src').events.map((e) => [e.kind, e.summary, e.session ?? null]);
    expect(rows).toEqual([
      ['command', `cd ${project()}`, 'agent'],
      ['checkpoint', 'checkpoint before', null],
      ['restore', `restored to checkpoint ${checkpoint.id}`, null],
      ['fork', `forked checkpoint ${checkpoint.id} as alt-1`, null],
    ]);
    expect(desk.replay.events('alt-1').events.map((e) => [e.kind, e.summary])).toEqual([
      ['fork', `forked from src's checkpoint ${checkpoint.id}`],
    ]);
  });

  it('a restored session whose directory is not there is walked with the usual warning', async () => {
    mkdirSync(project());
    await desk.exec({ sandbox: 'src', session: 'a', command: `cd ${project()}` });
    const { checkpoint } = await desk.checkpoints.checkpoint({ sandbox: 'src' });
    // The saved disk loses the directory behind the app's back: the record survives, the walk says so.
    rmSync(join(dir, 'data', 'checkpoints', checkpoint.id, 'disk', 'project'), { recursive: true });
    const r = await desk.checkpoints.restore('src', checkpoint.id);
    expect(r.warnings.map((w) => w.code)).toContain('cwd_missing');
  });

  it('forks are NEW-1..NEW-N, inherit the options, and their session records diverge', async () => {
    mkdirSync(project());
    await desk.exec({ sandbox: 'src', session: 'agent', command: `cd ${project()}` });
    const { checkpoint } = await desk.checkpoints.checkpoint({ sandbox: 'src' });
    const r = await desk.checkpoints.fork({ sandbox: 'src', checkpoint: checkpoint.id, as: 'try', count: 3 });
    expect(r.sandboxes.map((s) => s.name)).toEqual(['try-1', 'try-2', 'try-3']);
    expect(desk.store.sandboxes.get('try-2')!.options).toEqual({ cpus: '2' });
    for (const n of ['try-1', 'try-2', 'try-3']) {
      expect(desk.listSessions(n)).toMatchObject([{ key: 'agent', cwd: project(), restoredFrom: checkpoint.id }]);
      await desk.exec({ sandbox: n, session: 'agent', command: `mkdir -p /tmp/${n}-${process.pid} && cd /tmp/${n}-${process.pid}` });
    }
    const cwds = ['try-1', 'try-2', 'try-3'].map((n) => desk.listSessions(n)[0]!.cwd);
    expect(new Set(cwds).size).toBe(3);
    for (const n of ['try-1', 'try-2', 'try-3']) rmSync(`/tmp/${n}-${process.pid}`, { recursive: true, force: true });
    expect(desk.listSessions('src')[0]!.cwd).toBe(project());
  });

  it("a fork opens its source's session shells in each fork, and leaves the source's terminal alone", async () => {
    mkdirSync(project());
    await desk.exec({ sandbox: 'src', session: 'agent', command: `cd ${project()}` });
    const { terminal } = await desk.io.openTerminal({ sandbox: 'src', session: 'tty', cols: 80, rows: 24 });
    const { checkpoint } = await desk.checkpoints.checkpoint({ sandbox: 'src' });
    events.length = 0;
    const steps: string[] = [];
    await desk.checkpoints.fork({ sandbox: 'src', checkpoint: checkpoint.id, as: 'f' }, { onProgress: (e) => steps.push(e.step) });
    expect(events.filter((e) => e.topic === 'checkpoint').map((e) => (e as { phase: string }).phase)).toEqual(['forking', 'forked']);
    expect(steps).not.toContain('terminals');
    expect(desk.io.listTerminals('f')).toEqual([]);
    expect(terminal.exited).toBe(false);
    expect(desk.io.listTerminals('src').map((t) => t.terminalId)).toEqual([terminal.id]);
    const pwd = await desk.exec({ sandbox: 'f', session: 'agent', command: 'pwd' });
    expect(pwd.stdout).toBe(`${project()}\n`);
    expect(pwd.warnings.map((w) => w.code)).not.toContain('environment_recreated');
    terminal.dispose();
    await expect.poll(() => terminal.exited, { timeout: 10_000 }).toBe(true);
  }, 20_000);

  it('a fork that fails part-way leaves none of the forks behind', async () => {
    const { checkpoint } = await desk.checkpoints.checkpoint({ sandbox: 'src' });
    provider.failForkOf = 'g-2';
    await rejectsWith(desk.checkpoints.fork({ sandbox: 'src', checkpoint: checkpoint.id, as: 'g', count: 3 }), 'backend_unavailable');
    expect(desk.store.sandboxes.list().map((r) => r.name)).toEqual(['src']);
  });

  it('refuses bad input before anything is made', async () => {
    const { checkpoint } = await desk.checkpoints.checkpoint({ sandbox: 'src' });
    await desk.createSandbox({ name: 'other', backend: 'folder' });
    const other = await rejectsWith(desk.checkpoints.restore('other', checkpoint.id), 'refused');
    expect(other.message).toContain('taken of sandbox src');
    expect(other.hint).toContain('fork');
    for (const count of [0, 100]) {
      const e = await rejectsWith(desk.checkpoints.fork({ sandbox: 'src', checkpoint: checkpoint.id, as: 'f', count }), 'invalid_input');
      expect(e.message).toContain('1 to 20');
    }
    await desk.createSandbox({ name: 'f-2', backend: 'folder' });
    await rejectsWith(desk.checkpoints.fork({ sandbox: 'src', checkpoint: checkpoint.id, as: 'f', count: 3 }), 'name_taken');
    expect(desk.store.sandboxes.get('f-1')).toBeUndefined();
    await rejectsWith(desk.checkpoints.fork({ sandbox: 'src', checkpoint: checkpoint.id, as: 'src' }), 'name_taken');
    await rejectsWith(desk.checkpoints.restore('src', 'nosuch'), 'not_found');
    await rejectsWith(desk.checkpoints.restore('src', 'Bad Id'), 'invalid_input');
  });

  it('a checkpoint whose files were deleted is listed broken, and restoring it says so', async () => {
    const { checkpoint } = await desk.checkpoints.checkpoint({ sandbox: 'src' });
    rmSync(join(dir, 'data', 'checkpoints', checkpoint.id, 'disk'), { recursive: true });
    const [listed] = await desk.checkpoints.list('src');
    expect(listed).toMatchObject({ id: checkpoint.id, broken: true });
    expect(listed!.brokenDetail).toContain('was deleted');
    const e = await rejectsWith(desk.checkpoints.restore('src', checkpoint.id), 'not_found');
    expect(e.message).toContain('broken');
  });

  it('a backend without the capability is refused naming it; --memory where unsupported gives the reason', async () => {
    await desk.createSandbox({ name: 'plain', backend: 'local' });
    const e = await rejectsWith(desk.checkpoints.checkpoint({ sandbox: 'plain' }), 'unsupported');
    expect(e.message).toContain('checkpoints');
    await rejectsWith(desk.checkpoints.pause('plain'), 'unsupported');
    const m = await rejectsWith(desk.checkpoints.checkpoint({ sandbox: 'src', memory: true }), 'unsupported');
    expect(m.message).toContain('folders have no memory');
    expect(await desk.checkpoints.list()).toEqual([]);
  });

  it('a disk full mid-way leaves nothing listed, no files, and the sandbox running', async () => {
    provider.failAfterWrite = true;
    await rejectsWith(desk.checkpoints.checkpoint({ sandbox: 'src' }), 'backend_unavailable');
    expect(await desk.checkpoints.list()).toEqual([]);
    expect(readdirSync(join(dir, 'data', 'checkpoints'))).toEqual([]);
    expect(desk.store.checkpoints.ids()).toEqual([]);
    expect((await desk.inspectSandbox('src')).state).toBe('running');
    expect((await desk.exec({ sandbox: 'src', command: 'echo alive' })).stdout).toBe('alive\n');
  });

  it('a checkpoint left `saving` by a killed app is cleaned up on the next start, never listed', async () => {
    const id = 'deadbeef';
    mkdirSync(join(dir, 'data', 'checkpoints', id), { recursive: true });
    writeFileSync(join(dir, 'data', 'checkpoints', id, 'half'), 'x');
    // A pid that is not alive: the process that was saving it is gone.
    desk.store.checkpoints.insertSaving(
      {
        id,
        sandbox: 'src',
        backend: 'folder',
        label: null,
        createdAt: new Date().toISOString(),
        memory: false,
        cwd: { sessions: [], lastObservedCwd: null, lastObservedAt: null, declaredDefaultCwd: null },
        source: { image: null, user: null, options: {} },
      },
      2 ** 22 + 7,
    );
    expect(await desk.checkpoints.list()).toEqual([]);
    expect(desk.store.checkpoints.get(id)).toBeUndefined();
    expect(existsSync(join(dir, 'data', 'checkpoints', id))).toBe(false);
    expect(provider.removed).toContain(`sandbox-desk/checkpoint:${id}`);
  });

  it("an interrupted checkpoint's cleanup gets its folder (the backend's pending note), then this data dir's unrecorded artifacts are swept", async () => {
    const kept = (await desk.checkpoints.checkpoint({ sandbox: 'src' })).checkpoint.id;
    await desk.close();
    provider.sweeps.length = 0; // the first call of that process swept too
    // The next process (as the CLI's next call is) finds a record left `saving` by a dead pid.
    desk = new SandboxDesk({ dataDir: join(dir, 'data'), registry: desk.registry, plugins: false });
    const id = 'cafe0001';
    mkdirSync(join(dir, 'data', 'checkpoints', id), { recursive: true });
    desk.store.checkpoints.insertSaving(
      {
        id,
        sandbox: 'src',
        backend: 'folder',
        label: null,
        createdAt: new Date().toISOString(),
        memory: false,
        cwd: { sessions: [], lastObservedCwd: null, lastObservedAt: null, declaredDefaultCwd: null },
        source: { image: null, user: null, options: {} },
      },
      2 ** 22 + 9,
    );
    expect((await desk.checkpoints.list()).map((c) => c.id)).toEqual([kept]);
    expect(provider.interrupted).toEqual([
      { details: { interrupted: true, id, dir: join(dir, 'data', 'checkpoints', id) }, dirThere: true },
    ]);
    expect(provider.sweeps).toHaveLength(1);
    const sweep = provider.sweeps[0]!;
    expect(sweep.labels).toEqual({ 'io.sandbox-desk.instance': desk.store.instanceId });
    // Read against the store at the time of asking: the ready one is recorded, the cleaned-up one no longer.
    expect([sweep.recorded(kept), sweep.recorded(id), sweep.recorded('neverseen')]).toEqual([true, false, false]);
  });

  it('a stopped sandbox is checkpointed disk-only, said so', async () => {
    await desk.stopSandbox('src');
    const r = await desk.checkpoints.checkpoint({ sandbox: 'src' });
    expect(r.warnings.map((w) => w.code)).toContain('checkpoint_disk_only');
    await rejectsWith(desk.checkpoints.checkpoint({ sandbox: 'src', memory: true }), 'unsupported');
  });

  it('pause shows paused and keeps the incarnation; a command is refused until resume', async () => {
    await desk.exec({ sandbox: 'src', command: 'true' });
    const inc = desk.environments.cached('src')!.incarnation;
    expect((await desk.checkpoints.pause('src')).state).toBe('paused');
    expect(desk.environments.cached('src')?.incarnation).toBe(inc);
    const e = await rejectsWith(desk.exec({ sandbox: 'src', command: 'true', mode: 'oneshot' }), 'sandbox_not_running');
    expect(e.hint).toContain('resume');
    expect((await desk.checkpoints.resume('src')).state).toBe('running');
    expect((await desk.exec({ sandbox: 'src', command: 'echo ok' })).stdout).toBe('ok\n');
  });

  it('rm removes the checkpoint and its files', async () => {
    const { checkpoint } = await desk.checkpoints.checkpoint({ sandbox: 'src' });
    await desk.checkpoints.remove(checkpoint.id);
    expect(await desk.checkpoints.list()).toEqual([]);
    expect(existsSync(join(dir, 'data', 'checkpoints', checkpoint.id))).toBe(false);
    await rejectsWith(desk.checkpoints.remove(checkpoint.id), 'not_found');
  });
});
