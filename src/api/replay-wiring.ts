import type { CheckpointEvent, CoreEvent, CoreEventBus, NetworkEvent } from '../shared/core-events.js';
import type { AgentActionView, AgentRefusalView } from '../shared/desktop-types.js';
import type { ExecWarning } from '../shared/exec-result.js';
import type { Event, IDisposable } from '../shared/lifecycle.js';
import type { Lease } from '../shared/lease-types.js';
import type { NetworkPolicy } from '../shared/network-policy.js';
import type { LeaseChange } from '../store/lease-store.js';
import type { ReplayEvent } from '../shared/replay-types.js';
import type { ReplayJournal } from './replay-journal.js';
import type { ReplayService } from './replay-service.js';

/** How often each sandbox's recording is held to its size limit (besides at every recording change). */
const LIMIT_EVERY_MS = 60_000;

/** What a command's replay event is made of (an ExecOutcome has it). */
export interface CommandOutcome {
  exitCode: number;
  startCwd: string;
  cwd: string | null;
  warnings: ExecWarning[];
  durationMs: number;
  session: string;
  timedOut?: boolean;
}

/** A command as a replay event: its text, where it started and where it ended. */
export function commandEvent(at: string, command: string, r: CommandOutcome | { error: string; session: string }): ReplayEvent {
  const summary = command.length > 200 ? `${command.slice(0, 199)}…` : command;
  if ('error' in r) return { at, kind: 'command', summary, session: r.session, error: r.error };
  return {
    at,
    kind: 'command',
    summary,
    session: r.session,
    cwdUsed: r.startCwd,
    cwdObserved: r.cwd,
    exitCode: r.exitCode,
    durationMs: r.durationMs,
    warnings: r.warnings.map((w) => `${w.code}: ${w.message}`),
  };
}

/** A desktop action as a replay event: its point, and the frame it used (fetch it with replayFrame at frameAt). */
export function actionEvent(a: AgentActionView): ReplayEvent {
  const point = a.target ?? null;
  return {
    at: a.at,
    kind: 'action',
    summary: point ? `${a.kind} (${point.x}, ${point.y})` : a.kind,
    tool: a.kind,
    ...(a.session !== undefined ? { session: a.session } : {}),
    point,
    frameId: a.frame?.frameId ?? null,
    frameAt: a.frame?.takenAt ?? null,
  };
}

/** A refused action as a replay event: an `action` with its error, so the timeline shows what the agent tried while a person drove. */
export function refusedActionEvent(r: AgentRefusalView): ReplayEvent {
  const point = r.target ?? null;
  const who = r.session ? ` (session ${r.session})` : '';
  return {
    at: r.at,
    kind: 'action',
    summary: `${point ? `${r.kind} (${point.x}, ${point.y})` : r.kind}${who} — refused: a person had control`,
    tool: r.kind,
    session: r.session,
    point,
    error: `human_has_control: ${r.message}`,
  };
}

const holderText = (l: Lease): string => (l.holder === 'human' ? `human viewer ${l.viewerId ?? '?'}` : 'the agent');

/** A change of hands as a replay event, at the time it was written: who has control now, and from whom. */
export function leaseEvent(c: LeaseChange): ReplayEvent {
  const reason = c.lease.reason ? ` (${c.lease.reason})` : '';
  return { at: c.lease.since, kind: 'lease', summary: `control: ${holderText(c.lease)}, from ${holderText(c.previous)}${reason}` };
}

/** A policy in words: "open", "offline", "allow example.com, 10.0.0.0/8". */
function policyText(p: NetworkPolicy): string {
  if (p.mode !== 'allow') return p.mode;
  return p.allow.length ? `allow ${p.allow.join(', ')}` : 'allow nothing';
}

/**
 * The replay events a core event stands for, each with the sandbox whose journal it goes to: a
 * restore, a fork (on the source and on each fork) and a network policy change. Other events: none.
 */
export function coreReplayEvents(e: CoreEvent): Array<{ sandbox: string; event: ReplayEvent }> {
  if (e.topic === 'checkpoint') return checkpointEvents(e);
  if (e.topic === 'network' && e.kind === 'policy' && e.policy) return [networkEvent(e, e.policy)];
  return [];
}

function checkpointEvents(e: CheckpointEvent): Array<{ sandbox: string; event: ReplayEvent }> {
  if (e.phase === 'restored')
    return [{ sandbox: e.sandbox, event: { at: e.at, kind: 'restore', summary: `restored to checkpoint ${e.checkpoint}` } }];
  if (e.phase !== 'forked') return [];
  const forks = (e.message ?? '').split(' ').filter(Boolean);
  return [
    { sandbox: e.sandbox, event: { at: e.at, kind: 'fork', summary: `forked checkpoint ${e.checkpoint} as ${forks.join(', ') || '?'}` } },
    ...forks.map((f) => ({
      sandbox: f,
      event: { at: e.at, kind: 'fork' as const, summary: `forked from ${e.sandbox}'s checkpoint ${e.checkpoint}` },
    })),
  ];
}

function networkEvent(e: NetworkEvent, policy: NetworkPolicy): { sandbox: string; event: ReplayEvent } {
  return { sandbox: e.sandbox, event: { at: e.at, kind: 'network', summary: `network policy: ${policyText(policy)}` } };
}

/**
 * Feeds the replay: desktop actions, lease changes, restores, forks and network policy changes made
 * in this process go to events.jsonl, a recording change becomes a `replay` event, and each sandbox
 * is held to its size limit now and then. Restores, forks and policy changes come from the bus, but
 * only this process's own (`remote` unset): another process's are relayed here and journalled there.
 *
 * Lease changes come from the lease store's own writes, not from `lease` bus events: the bus also
 * fires for a re-acquire or a non-holder's give-back that changed nothing (every watcher's stream
 * close does one), and carries other processes' changes, which those processes journal themselves
 * — events.jsonl is one file per sandbox that every process on the data dir appends whole lines to.
 */
export function wireReplay(opts: {
  bus: CoreEventBus;
  journal: ReplayJournal;
  replay: ReplayService;
  /** The lease store's changes of hands made by this process (LeaseStore.onChanged). */
  onLeaseChanged: Event<LeaseChange>;
  onActionRecorded?: Event<{ sandbox: string; action?: AgentActionView }> | undefined;
  /** Agent actions refused while a person held control (DesktopService.onActionRefused). */
  onActionRefused?: Event<AgentRefusalView> | undefined;
  /** recscreen's DesktopService.onRecordingChanged, when present. */
  onRecordingChanged?: Event<{ sandbox: string }> | undefined;
}): IDisposable {
  const subs: IDisposable[] = [];
  if (opts.onActionRecorded)
    subs.push(
      opts.onActionRecorded(({ sandbox, action }) => {
        if (action) opts.journal.append(sandbox, actionEvent(action));
      }),
    );
  if (opts.onActionRefused) subs.push(opts.onActionRefused((r) => opts.journal.append(r.sandbox, refusedActionEvent(r))));
  subs.push(opts.onLeaseChanged((c) => opts.journal.append(c.sandbox, leaseEvent(c))));
  subs.push(
    opts.bus.onEvent((e) => {
      if (e.remote) return;
      const made = coreReplayEvents(e);
      for (const { sandbox, event } of made) opts.journal.append(sandbox, event);
      // The replay view re-reads on `replay` (a restore or a policy change is not a recording change).
      for (const sandbox of new Set(made.map((m) => m.sandbox))) opts.bus.publish({ topic: 'replay', sandbox });
    }),
  );
  if (opts.onRecordingChanged)
    subs.push(
      opts.onRecordingChanged(({ sandbox }) => {
        opts.bus.publish({ topic: 'replay', sandbox });
        try {
          opts.replay.enforceLimit(sandbox);
        } catch {
          /* best effort: the next round tries again */
        }
      }),
    );
  const timer = setInterval(() => opts.replay.enforceLimits(), LIMIT_EVERY_MS);
  timer.unref();
  return {
    dispose: () => {
      clearInterval(timer);
      for (const s of subs) s.dispose();
    },
  };
}
