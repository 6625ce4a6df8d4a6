/**
 * Network policy per sandbox, as the app runs it: the stored policy (store/network-policy-store.ts),
 * its mirror for the egress proxy process (policies.json), the proxy's life (started detached per data
 * dir, restarted when it dies while this core runs — and said so, in the log and as an event), the
 * backend's enforcement (SandboxProvider.networkPolicy) and the per-sandbox connection log, published
 * on the core's event bus as `network` events. The facade (sandbox-desk.ts) calls it at create, start,
 * stop and removal; see docs/network-policy.md for the design.
 */
import { SandboxDeskError } from '../shared/errors.js';
import type { CoreEventBus } from '../shared/core-events.js';
import type { IDisposable } from '../shared/lifecycle.js';
import { normalizeAllowEntry, type NetworkLogEntry, type NetworkMode, type NetworkPolicy } from '../shared/network-policy.js';
import type { Logger } from '../platform/log.js';
import type { NetworkPlan, SandboxProvider } from '../sandbox/provider.js';
import {
  appendSpan,
  logFileOf,
  olderOf,
  readLog,
  readLogSince,
  readSpans,
  socketDirOf,
  spansFileOf,
  writePolicies,
} from '../sandbox/network/network-files.js';
import type { CallLogEntry } from '../shared/call-log-types.js';
import { linkCalls, markCalls } from './call-connections.js';
import { ensureProxy, proxyPid } from '../sandbox/network/proxy-supervisor.js';
import { sandboxRef } from '../session/environment-manager.js';
import type { SandboxRecord } from '../store/sandbox-store.js';
import type { Store } from '../store/store.js';
import { rmSync } from 'node:fs';

export interface NetworkChange {
  mode?: NetworkMode | undefined;
  allow?: string[] | undefined;
  deny?: string[] | undefined;
}

export interface NetworkServiceDeps {
  store: Store;
  events: CoreEventBus;
  log: Logger;
  providerOf(backend: string): Promise<SandboxProvider>;
  record(name: string): SandboxRecord;
  resourceName(rec: SandboxRecord): string;
  labels(rec: SandboxRecord): Record<string, string>;
  /** The sandbox's processes must pick up new proxy settings: its environment is reconnected. */
  reconnect(name: string): void;
}

/** How often the log files are read for new lines and the proxy is checked (this core only). */
const WATCH_MS = 400;

export class NetworkService implements IDisposable {
  private timer: NodeJS.Timeout | null = null;
  private readonly offsets = new Map<string, number>();
  private readonly knownPid: { pid: number | null } = { pid: null };
  private restarting = false;

  constructor(private readonly deps: NetworkServiceDeps) {}

  private get dataDir(): string {
    return this.deps.store.dataDir;
  }

  policy(name: string): NetworkPolicy {
    return this.deps.store.networkPolicies.get(name);
  }

  /** Refuses a mode the backend cannot enforce, with the reason (never applied on paper only). */
  private check(provider: SandboxProvider, mode: NetworkMode): void {
    if (mode === 'open') return;
    const cap = provider.networkPolicy;
    if (!cap || !cap.modes.includes(mode)) {
      throw new SandboxDeskError('unsupported', `the ${provider.name} backend cannot enforce network mode ${mode}`, {
        hint: cap
          ? `it enforces ${cap.modes.join(', ')}`
          : `a ${provider.name} sandbox runs on this machine's network; use --network open, or a docker or qemu sandbox`,
      });
    }
  }

  /** The policy a create asked for, validated against the backend before anything is made. */
  initial(provider: SandboxProvider, mode: NetworkMode | undefined, allow: readonly string[] | undefined): NetworkPolicy {
    const entries = [...new Set((allow ?? []).map(normalizeAllowEntry))];
    const m = mode ?? (entries.length > 0 ? 'allow' : 'open');
    if (m !== 'allow' && entries.length > 0)
      throw new SandboxDeskError('invalid_input', `--allow only applies to --network allow (not ${m})`, {
        hint: 'pass --network allow with the --allow entries, or leave --network out',
      });
    this.check(provider, m);
    return { mode: m, allow: entries };
  }

  /** Stores a new sandbox's policy (only when it is not the default: an open sandbox needs no row). */
  remember(name: string, policy: NetworkPolicy): void {
    if (policy.mode === 'open' && policy.allow.length === 0) return;
    this.deps.store.networkPolicies.set(name, policy);
    this.mirror();
  }

  /**
   * A fork or a restored copy keeps its source's policy (issue 17 §4): the seam for the checkpoint
   * work — call it before the new sandbox first starts.
   */
  inherit(source: string, target: string): NetworkPolicy {
    const policy = this.policy(source);
    this.remember(target, policy);
    return policy;
  }

  private mirror(): void {
    writePolicies(this.dataDir, this.deps.store.networkPolicies.all());
  }

  private plan(rec: SandboxRecord, policy: NetworkPolicy): NetworkPlan {
    return {
      policy,
      socketDir: socketDirOf(this.dataDir, rec.name),
      resourceName: this.deps.resourceName(rec),
      labels: this.deps.labels(rec),
    };
  }

  private hasRow(name: string): boolean {
    return name in this.deps.store.networkPolicies.all();
  }

  /** Before every start: the proxy up (allow), the backend's networks set. A sandbox never given a policy is left alone. */
  async beforeStart(rec: SandboxRecord, provider: SandboxProvider): Promise<void> {
    if (!this.hasRow(rec.name) || !provider.networkPolicy) return;
    const policy = this.policy(rec.name);
    if (policy.mode === 'allow') await this.ensureProxy([rec.name]);
    await provider.networkPolicy.apply(sandboxRef(rec), this.plan(rec, policy));
  }

  async afterStop(rec: SandboxRecord, provider: SandboxProvider): Promise<void> {
    if (!this.hasRow(rec.name) || !provider.networkPolicy) return;
    await provider.networkPolicy.release(sandboxRef(rec), this.plan(rec, this.policy(rec.name)), 'stopped').catch((err: unknown) => {
      this.deps.log.warn({ sandbox: rec.name, err: String(err) }, 'could not stop the egress relay');
    });
  }

  async onRemove(rec: SandboxRecord, provider: SandboxProvider): Promise<void> {
    if (this.hasRow(rec.name) && provider.networkPolicy) {
      await provider.networkPolicy.release(sandboxRef(rec), this.plan(rec, this.policy(rec.name)), 'removed').catch((err: unknown) => {
        this.deps.log.warn({ sandbox: rec.name, err: String(err) }, 'could not remove the sandbox network');
      });
    }
    this.deps.store.networkPolicies.delete(rec.name);
    this.mirror();
    rmSync(logFileOf(this.dataDir, rec.name), { force: true });
    rmSync(olderOf(logFileOf(this.dataDir, rec.name)), { force: true });
    rmSync(socketDirOf(this.dataDir, rec.name), { recursive: true, force: true });
    rmSync(spansFileOf(this.dataDir, rec.name), { force: true });
    rmSync(olderOf(spansFileOf(this.dataDir, rec.name)), { force: true });
  }

  /** `sandbox network NAME --mode/--allow/--deny`: stored, mirrored, enforced now when it runs. */
  async change(name: string, change: NetworkChange, running: boolean): Promise<NetworkPolicy> {
    const rec = this.deps.record(name);
    const provider = await this.deps.providerOf(rec.backend);
    const before = this.policy(name);
    const add = (change.allow ?? []).map(normalizeAllowEntry);
    const remove = new Set((change.deny ?? []).map(normalizeAllowEntry));
    const allow = [...new Set([...before.allow, ...add])].filter((e) => !remove.has(e));
    // Adding entries to an open or offline sandbox means: allow these (unless a mode was given).
    const mode = change.mode ?? (add.length > 0 && before.mode !== 'allow' ? 'allow' : before.mode);
    this.check(provider, mode);
    if (running && mode !== before.mode && provider.networkPolicy && !provider.networkPolicy.liveModeSwitch) {
      throw new SandboxDeskError('unsupported', `the ${provider.name} backend cannot change the network mode of a running sandbox`, {
        hint: `stop it (\`sandbox-desk sandbox stop ${name}\`), change the mode, and start it again; the allow list can change while it runs`,
      });
    }
    const policy: NetworkPolicy = { mode, allow };
    this.deps.store.networkPolicies.set(name, policy);
    this.mirror();
    if (running && provider.networkPolicy) {
      if (mode === 'allow') await this.ensureProxy([name]);
      await provider.networkPolicy.apply(sandboxRef(rec), this.plan(rec, policy));
      if (mode !== before.mode) this.deps.reconnect(name);
    }
    this.deps.events.publish({ topic: 'network', sandbox: name, kind: 'policy', policy });
    return policy;
  }

  /** The connection log, each line a call's command made marked with its `callId` (call-connections.ts). */
  log(name: string, limit?: number): NetworkLogEntry[] {
    this.deps.record(name);
    const log = readLog(this.dataDir, name, limit);
    if (log.length === 0) return log;
    return markCalls(log, this.deps.store.callLog.list({ sandbox: name, limit: 1000 }), name, readSpans(this.dataDir, name));
  }

  /**
   * Remembers which shell ran a command and when, for a sandbox with a network policy (the others have
   * no connection log to link): the call log's link to the connections (call-connections.ts).
   */
  noteCommand(name: string, r: { session: string; shellPid?: number | undefined; durationMs: number }, startedAt: Date): void {
    if (r.shellPid === undefined || !this.hasRow(name)) return;
    try {
      appendSpan(this.dataDir, name, {
        session: r.session,
        pid: r.shellPid,
        start: startedAt.toISOString(),
        end: new Date(startedAt.getTime() + r.durationMs).toISOString(),
      });
    } catch (err) {
      this.deps.log.debug({ sandbox: name, err: String(err) }, 'could not note the command span');
    }
  }

  /** Call log entries with the connections each made (for the sandboxes that have a connection log). */
  linkCalls(calls: CallLogEntry[]): CallLogEntry[] {
    const sandboxes = new Set(calls.map((c) => c.sandbox).filter((s): s is string => s !== null && this.hasRow(s)));
    let out = calls;
    for (const s of sandboxes) out = linkCalls(out, s, readSpans(this.dataDir, s), readLog(this.dataDir, s));
    return out;
  }

  private async ensureProxy(sandboxes: string[]): Promise<void> {
    const { pid, started } = await ensureProxy(this.dataDir, sandboxes);
    // Started here: the first time for this data dir, or again after it died with no core watching.
    if (started) this.deps.log.info({ pid, sandboxes }, 'started the egress proxy');
    this.knownPid.pid = pid;
    this.watch();
  }

  /** Tails the logs into events and keeps the proxy alive while this core runs (unref'd: never holds the process). */
  watch(): void {
    if (this.timer) return;
    this.knownPid.pid ??= proxyPid(this.dataDir);
    this.timer = setInterval(() => {
      this.tick().catch((err: unknown) => this.deps.log.debug({ err: String(err) }, 'network watch tick failed'));
    }, WATCH_MS);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (!this.timer) return;
    const policies = this.deps.store.networkPolicies.all();
    for (const name of Object.keys(policies)) {
      const had = this.offsets.get(name);
      const { entries, offset } = readLogSince(this.dataDir, name, had ?? 0);
      this.offsets.set(name, offset);
      // The first read only finds where the log ends: history is `network log`'s, events are what is new.
      if (had === undefined) continue;
      for (const entry of entries) this.deps.events.publish({ topic: 'network', sandbox: name, kind: 'connection', entry });
    }
    const needed = Object.entries(policies)
      .filter(([, p]) => p.mode === 'allow')
      .map(([s]) => s);
    // None needs it: it exits on its own (proxy-daemon.ts), which is no death to report; started again on demand.
    if (needed.length === 0) this.knownPid.pid = null;
    if (needed.length === 0 || this.restarting || this.knownPid.pid === null) return;
    const alive = proxyPid(this.dataDir);
    if (alive !== null) {
      this.knownPid.pid = alive;
      return;
    }
    // The proxy died: its sandboxes have no way out now (fail closed) until it is back.
    this.restarting = true;
    const message = `the egress proxy (pid ${this.knownPid.pid}) died; its sandboxes had no network until it was restarted`;
    try {
      const { pid } = await ensureProxy(this.dataDir, needed);
      this.knownPid.pid = pid;
      this.deps.log.warn({ sandboxes: needed, pid }, `${message} (now pid ${pid})`);
      for (const s of needed)
        this.deps.events.publish({ topic: 'network', sandbox: s, kind: 'proxy-restarted', message: `${message} (now pid ${pid})` });
    } catch (err) {
      this.deps.log.error({ err: String(err) }, 'the egress proxy could not be restarted');
    } finally {
      this.restarting = false;
    }
  }

  dispose(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
