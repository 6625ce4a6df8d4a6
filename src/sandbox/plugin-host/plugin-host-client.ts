import { fork, type ChildProcess } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';
import { fileURLToPath } from 'node:url';
import { SandboxDeskError } from '../../shared/errors.js';
import type { PluginLogger } from '../plugin-api.js';
import type { ProgressEvent } from '../provider.js';
import { timeoutError } from '../plugins/plugin-guard.js';
import { RestartBudget } from './restart-budget.js';
import type { HostMessage, HostRequest, LoadResult, ProviderDescriptor, ProviderMethod, WireError } from './rpc-protocol.js';

export type HostState = 'idle' | 'running' | 'crashed' | 'given-up' | 'closed';

export interface PluginHostOptions {
  plugin: string;
  entry: string;
  dataDir: string;
  apiVersion: number;
  logger: PluginLogger;
  loadTimeoutMs: number;
  budget?: RestartBudget;
  /** How long a host gets to answer a ping after one of its calls timed out, before it is killed as hung. */
  pingTimeoutMs?: number;
  /** Starts the child; the default forks host-child.js (or .ts under the test runner). */
  spawnHost?: () => ChildProcess;
}

/** What a call's caller hears besides its result: progress events, and the refreshed default cwd. */
export interface CallListeners {
  onProgress?: ((e: ProgressEvent) => void) | undefined;
  onDefaultCwd?: ((d: ProviderDescriptor['defaultCwd']) => void) | undefined;
}

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  what: string;
  onProgress?: ((e: ProgressEvent) => void) | undefined;
  onDefaultCwd?: ((d: ProviderDescriptor['defaultCwd']) => void) | undefined;
  timer?: NodeJS.Timeout;
}

/** Forks the host script next to this file; under the test runner (sources, not dist) through tsx. */
export function forkHostChild(): ChildProcess {
  const fromSource = import.meta.url.endsWith('.ts');
  const script = fileURLToPath(new URL(fromSource ? './host-child.ts' : './host-child.js', import.meta.url));
  return fork(script, [], {
    execArgv: fromSource ? ['--import', 'tsx'] : [],
    // stdout/stderr are read (never left to fill a pipe and block the plugin); stderr's tail explains crashes.
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    serialization: 'json',
    // Inside Electron, process.execPath is the Electron binary: make it behave as plain Node.
    env: { ...process.env, ELECTRON_RUN_AS_NODE: '1', SANDBOX_DESK_PLUGIN_HOST: '1' },
  });
}

function fromWire(e: WireError): Error {
  // An ordinary Error thrown by the plugin stays ordinary, so the guard names the plugin and method.
  if (e.plain) return new Error(e.message);
  return new SandboxDeskError(e.code, e.message, e.hint ? { hint: e.hint } : {});
}

/**
 * The app's side of one isolated plugin host: calls with timeouts, crash detection (pending calls
 * fail at once, with a clear error), restarts within a budget, and a hung host killed after a call
 * timed out and a ping went unanswered. Nothing here can throw into the app except as a rejected call.
 */
export class PluginHostClient {
  state: HostState = 'idle';
  /** Why the host last went down, for `plugin list`. */
  lastError: string | null = null;
  crashes = 0;
  private child: ChildProcess | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private stderrTail = '';
  private providerNames: string[] | null = null;
  private reviving: Promise<void> | null = null;
  private readonly budget: RestartBudget;

  constructor(private readonly opts: PluginHostOptions) {
    this.budget = opts.budget ?? new RestartBudget();
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts the host and loads the plugin in it. Throws (and leaves no process behind) when that fails. */
  async load(): Promise<LoadResult> {
    this.spawn();
    try {
      const r = (await this.request(
        {
          kind: 'load',
          load: { entry: this.opts.entry, plugin: this.opts.plugin, dataDir: this.opts.dataDir, apiVersion: this.opts.apiVersion },
        },
        'load',
        this.opts.loadTimeoutMs,
      )) as LoadResult;
      this.providerNames = r.providers.map((p) => String(p.name));
      return r;
    } catch (err) {
      this.kill();
      this.state = 'given-up';
      throw err;
    }
  }

  private spawn(): void {
    const child = (this.opts.spawnHost ?? forkHostChild)();
    this.child = child;
    this.state = 'running';
    this.stderrTail = '';
    // What the plugin prints (console.log, a stack trace) goes to the app's log, line by line, so an
    // isolated plugin is as visible there as an in-process one's ctx.logger. One decoder per stream: a
    // UTF-8 character split across two chunks stays whole.
    const toLog = (stream: string): ((c: Buffer) => void) => {
      const text = new StringDecoder('utf8');
      let partial = '';
      return (c) => {
        const lines = (partial + text.write(c)).split('\n');
        partial = lines.pop()!.slice(-2000);
        for (const l of lines) if (l.trim()) this.opts.logger.info(`${stream}: ${l.slice(0, 500)}`);
      };
    };
    child.stdout?.on('data', toLog('stdout'));
    child.stderr?.on('data', toLog('stderr'));
    const stderrText = new StringDecoder('utf8');
    child.stderr?.on('data', (c: Buffer) => (this.stderrTail = (this.stderrTail + stderrText.write(c)).slice(-2000)));
    this.opts.logger.info(`isolated host started (pid ${child.pid ?? '?'})`);
    child.on('message', (m: unknown) => this.onMessage(m as HostMessage));
    child.on('error', (err) => this.onExit(child, `could not run: ${err.message}`));
    child.on('exit', (code, signal) => this.onExit(child, signal ? `killed by ${signal}` : `exit code ${code}`));
  }

  private onMessage(m: HostMessage): void {
    if (m.kind === 'log') {
      (m.level === 'warn' ? this.opts.logger.warn : this.opts.logger.info)(String(m.message));
      return;
    }
    const p = this.pending.get(m.id);
    if (!p) return;
    if (m.kind === 'progress') {
      try {
        p.onProgress?.(m.event);
      } catch {
        // a listener's failure is not the plugin's
      }
      return;
    }
    this.pending.delete(m.id);
    clearTimeout(p.timer);
    if (m.kind === 'result') {
      if (m.defaultCwd) p.onDefaultCwd?.(m.defaultCwd);
      p.resolve(m.value);
    } else p.reject(fromWire(m.error));
  }

  private onExit(child: ChildProcess, how: string): void {
    if (child !== this.child) return;
    this.child = null;
    if (this.state === 'closed') return;
    this.crashes += 1;
    const tail = this.stderrTail.trim().split('\n').slice(-3).join(' | ');
    this.lastError = `the isolated host of plugin ${this.opts.plugin} stopped (${how})${tail ? `: ${tail}` : ''}`;
    if (this.state !== 'given-up') this.state = 'crashed';
    const err = new SandboxDeskError('backend_unavailable', this.lastError, {
      hint: `the app keeps running; the host is restarted on the next call (at most ${this.budget.max} times in ${Math.round(this.budget.windowMs / 60_000)} minutes)`,
    });
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      this.pending.delete(id);
      p.reject(err);
    }
  }

  private request(
    req: Omit<Extract<HostRequest, { kind: 'load' }>, 'id'> | Omit<Extract<HostRequest, { kind: 'call' }>, 'id'> | { kind: 'ping' },
    what: string,
    timeoutMs: number,
    listen: CallListeners = {},
  ): Promise<unknown> {
    const child = this.child;
    if (!child || !child.connected)
      return Promise.reject(new SandboxDeskError('backend_unavailable', `the isolated host of plugin ${this.opts.plugin} is not running`));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const p: Pending = { resolve, reject, what, onProgress: listen.onProgress, onDefaultCwd: listen.onDefaultCwd };
      p.timer = setTimeout(() => {
        this.pending.delete(id);
        reject(
          timeoutError(
            what.startsWith('backend ') ? what.slice(0, what.lastIndexOf(':')) : `plugin ${this.opts.plugin}`,
            what.slice(what.lastIndexOf(':') + 1),
            timeoutMs,
          ),
        );
        if (req.kind !== 'ping') void this.checkAlive(child);
      }, timeoutMs);
      p.timer.unref?.();
      this.pending.set(id, p);
      child.send({ id, ...req } as HostRequest, (err) => {
        if (!err) return;
        this.pending.delete(id);
        clearTimeout(p.timer);
        reject(
          new SandboxDeskError('backend_unavailable', `could not reach the isolated host of plugin ${this.opts.plugin}: ${err.message}`),
        );
      });
    });
  }

  /** After a timeout: a host that cannot even answer a ping is stuck (e.g. a busy loop) and is killed. */
  private async checkAlive(child: ChildProcess): Promise<void> {
    try {
      await this.request({ kind: 'ping' }, 'ping', this.opts.pingTimeoutMs ?? 3000);
    } catch {
      if (child === this.child) {
        this.opts.logger.warn(`plugin ${this.opts.plugin}: the isolated host does not answer; killing it`);
        child.kill('SIGKILL');
      }
    }
  }

  /** Restarts a crashed host, within the budget; a host that cannot load its plugin again stays down. */
  private revive(): Promise<void> {
    this.reviving ??= (async () => {
      if (!this.budget.take()) {
        this.state = 'given-up';
        return;
      }
      this.opts.logger.warn(
        `plugin ${this.opts.plugin}: restarting its isolated host (${this.budget.used()} of ${this.budget.max} in the window)`,
      );
      const before = this.providerNames;
      try {
        const r = await this.load();
        const names = r.providers.map((p) => String(p.name));
        if (JSON.stringify(names) !== JSON.stringify(before)) {
          this.kill();
          this.state = 'given-up';
          this.lastError = `plugin ${this.opts.plugin} registered different backends after a restart (${names.join(', ')} instead of ${before?.join(', ')})`;
        }
      } catch (err) {
        this.state = 'given-up';
        this.lastError = `plugin ${this.opts.plugin} failed to load again after its host crashed: ${err instanceof Error ? err.message : String(err)}`;
      }
    })().finally(() => (this.reviving = null));
    return this.reviving;
  }

  async call(provider: string, method: ProviderMethod, args: unknown[], timeoutMs: number, listen: CallListeners = {}): Promise<unknown> {
    if (this.state === 'closed') throw new SandboxDeskError('backend_unavailable', `plugin ${this.opts.plugin} is shut down`);
    if (this.state === 'crashed') await this.revive();
    if (this.state === 'given-up') {
      throw new SandboxDeskError(
        'backend_unavailable',
        `the isolated host of plugin ${this.opts.plugin} is down and is not restarted again (${this.crashes} crash${this.crashes === 1 ? '' : 'es'}; last: ${this.lastError ?? 'unknown'})`,
        {
          hint: `fix or remove the plugin, then restart Sandbox Desk; \`sandbox-desk plugin list\` shows its state`,
        },
      );
    }
    return this.request(
      { kind: 'call', provider, method, args },
      `backend ${provider} (plugin ${this.opts.plugin}):${method}`,
      timeoutMs,
      listen,
    );
  }

  private kill(): void {
    const c = this.child;
    this.child = null;
    if (c && c.exitCode === null) c.kill('SIGKILL');
  }

  async dispose(): Promise<void> {
    this.state = 'closed';
    const c = this.child;
    this.child = null;
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      this.pending.delete(id);
      p.reject(new SandboxDeskError('backend_unavailable', `plugin ${this.opts.plugin} is shutting down`));
    }
    if (!c || c.exitCode !== null) return;
    const gone = new Promise<void>((r) => c.once('exit', () => r()));
    c.disconnect?.();
    const t = setTimeout(() => c.kill('SIGKILL'), 2000);
    await gone;
    clearTimeout(t);
  }
}
