import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CoreEventBus, type CoreEvent } from '../shared/core-events.js';
import type { AgentActionView, AgentRefusalView } from '../shared/desktop-types.js';
import { Emitter } from '../shared/lifecycle.js';
import type { Lease } from '../shared/lease-types.js';
import type { LeaseChange } from '../store/lease-store.js';
import { ReplayJournal } from './replay-journal.js';
import type { ReplayService } from './replay-service.js';
import { actionEvent, commandEvent, leaseEvent, wireReplay } from './replay-wiring.js';

const root = mkdtempSync(join(tmpdir(), 'sdesk-replay-wiring-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const click: AgentActionView = {
  sandbox: 'box',
  at: '2026-03-01T10:00:05.000Z',
  kind: 'click',
  target: { x: 412, y: 300 },
  pointer: { x: 412, y: 300 },
  screen: { width: 1280, height: 800 },
  frame: { frameId: 'f1', width: 640, height: 400, image: 'data:image/png;base64,', takenAt: '2026-03-01T10:00:04.500Z' },
};

describe('replay wiring', () => {
  it('a command, a desktop action and a lease change as replay events', () => {
    expect(
      commandEvent('2026-03-01T10:00:00.000Z', 'cd /tmp/proj', {
        exitCode: 0,
        startCwd: '/home/user',
        cwd: '/tmp/proj',
        warnings: [{ code: 'cwd_missing', message: 'gone' }],
        durationMs: 12,
        session: 'default',
      }),
    ).toEqual({
      at: '2026-03-01T10:00:00.000Z',
      kind: 'command',
      summary: 'cd /tmp/proj',
      session: 'default',
      cwdUsed: '/home/user',
      cwdObserved: '/tmp/proj',
      exitCode: 0,
      durationMs: 12,
      warnings: ['cwd_missing: gone'],
    });
    expect(commandEvent('t', 'x'.repeat(300), { error: 'boom', session: 's' }).summary).toHaveLength(200);
    expect(actionEvent(click)).toMatchObject({
      kind: 'action',
      summary: 'click (412, 300)',
      point: { x: 412, y: 300 },
      frameId: 'f1',
      frameAt: '2026-03-01T10:00:04.500Z',
    });
    expect(actionEvent({ ...click, kind: 'type', target: null, frame: null })).toMatchObject({
      summary: 'type',
      point: null,
      frameId: null,
    });
    const human: Lease = { holder: 'human', viewerId: 'v1', epoch: 2, since: '2026-03-01T10:00:06.000Z', reason: 'taken by a viewer' };
    const agent: Lease = { holder: 'agent', viewerId: null, epoch: 1, since: '2026-03-01T10:00:01.000Z', reason: null };
    // At the time the lease was written, naming who has control now and from whom.
    expect(leaseEvent({ sandbox: 'box', lease: human, previous: agent })).toEqual({
      at: '2026-03-01T10:00:06.000Z',
      kind: 'lease',
      summary: 'control: human viewer v1, from the agent (taken by a viewer)',
    });
    expect(leaseEvent({ sandbox: 'box', lease: { ...agent, epoch: 3, reason: 'given back' }, previous: human }).summary).toBe(
      'control: the agent, from human viewer v1 (given back)',
    );
  });

  it("journals this process's actions and lease writes (not bus lease events), publishes the screen recorder's changes", () => {
    const bus = new CoreEventBus();
    const journal = new ReplayJournal(root);
    const actions = new Emitter<{ sandbox: string; action?: AgentActionView }>();
    const recording = new Emitter<{ sandbox: string }>();
    const leases = new Emitter<LeaseChange>();
    const limited: string[] = [];
    const seen: CoreEvent[] = [];
    bus.onEvent((e) => seen.push(e));
    const w = wireReplay({
      bus,
      journal,
      replay: { enforceLimit: (s: string) => (limited.push(s), 0), enforceLimits: () => undefined } as unknown as ReplayService,
      onLeaseChanged: leases.event,
      onActionRecorded: actions.event,
      onRecordingChanged: recording.event,
    });
    actions.fire({ sandbox: 'box', action: click });
    leases.fire({
      sandbox: 'box',
      lease: { holder: 'agent', viewerId: null, epoch: 3, since: '2026-03-01T10:00:07.000Z', reason: 'given back' },
      previous: { holder: 'human', viewerId: 'v1', epoch: 2, since: '2026-03-01T10:00:06.000Z', reason: 'taken by a viewer' },
    });
    // The bus says "the lease may have changed" also for writes that changed nothing, and relays
    // other processes' changes (which they journal): neither is an entry here.
    bus.publish({ topic: 'lease', sandbox: 'box' });
    bus.publish({ topic: 'lease', sandbox: 'box', remote: true } as never);
    recording.fire({ sandbox: 'box' });
    expect(journal.read('box').map((e) => [e.kind, e.summary])).toEqual([
      ['action', 'click (412, 300)'],
      ['lease', 'control: the agent, from human viewer v1 (given back)'],
    ]);
    expect(seen.filter((e) => e.topic === 'replay')).toHaveLength(1);
    expect(limited).toEqual(['box']);
    w.dispose();
    actions.fire({ sandbox: 'box', action: click });
    expect(journal.read('box')).toHaveLength(2);
  });

  it("journals this process's restores, forks (on both sides) and network policy changes, not relayed ones", () => {
    const bus = new CoreEventBus();
    const journal = new ReplayJournal(join(root, 'core'));
    const seen: CoreEvent[] = [];
    bus.onEvent((e) => seen.push(e));
    const w = wireReplay({
      bus,
      journal,
      replay: { enforceLimit: () => 0, enforceLimits: () => undefined } as unknown as ReplayService,
      onLeaseChanged: new Emitter<LeaseChange>().event,
    });
    const t = (s: number) => `2026-03-01T10:00:${String(s).padStart(2, '0')}.000Z`;
    bus.publish({ topic: 'checkpoint', sandbox: 'box', checkpoint: 'cp1', phase: 'ready', at: t(1) });
    bus.publish({ topic: 'checkpoint', sandbox: 'box', checkpoint: 'cp1', phase: 'restored', at: t(2) });
    bus.publish({ topic: 'checkpoint', sandbox: 'box', checkpoint: 'cp1', phase: 'forked', message: 'try-1 try-2', at: t(3) });
    bus.publish({
      topic: 'network',
      sandbox: 'box',
      kind: 'policy',
      policy: { mode: 'allow', allow: ['example.com', '10.0.0.0/8'] },
      at: t(4),
    });
    bus.publish({ topic: 'network', sandbox: 'box', kind: 'policy', policy: { mode: 'offline', allow: [] }, at: t(5) });
    // Another process's restore, relayed here: that process journals it.
    bus.publish({ topic: 'checkpoint', sandbox: 'box', checkpoint: 'cp2', phase: 'restored', remote: true, at: t(6) } as never);
    expect(journal.read('box').map((e) => [e.at, e.kind, e.summary])).toEqual([
      [t(2), 'restore', 'restored to checkpoint cp1'],
      [t(3), 'fork', 'forked checkpoint cp1 as try-1, try-2'],
      [t(4), 'network', 'network policy: allow example.com, 10.0.0.0/8'],
      [t(5), 'network', 'network policy: offline'],
    ]);
    expect(journal.read('try-2').map((e) => [e.kind, e.summary])).toEqual([['fork', "forked from box's checkpoint cp1"]]);
    // The replay view hears of each (it re-reads on `replay`).
    expect(seen.filter((e) => e.topic === 'replay').map((e) => (e as { sandbox: string }).sandbox)).toEqual([
      'box',
      'box',
      'try-1',
      'try-2',
      'box',
      'box',
    ]);
    w.dispose();
  });

  it('an agent action refused while a person had control is journalled as an action with its error and session', () => {
    const journal = new ReplayJournal(join(root, 'refused'));
    const refused = new Emitter<AgentRefusalView>();
    const w = wireReplay({
      bus: new CoreEventBus(),
      journal,
      replay: { enforceLimit: () => 0, enforceLimits: () => undefined } as unknown as ReplayService,
      onLeaseChanged: new Emitter<LeaseChange>().event,
      onActionRefused: refused.event,
    });
    refused.fire({
      sandbox: 'box',
      at: '2026-03-01T10:00:08.000Z',
      kind: 'click',
      target: { x: 100, y: 200 },
      session: 'planner',
      viewerId: 'v1',
      message: "a human holds the control lease of sandbox box's desktop",
    });
    expect(journal.read('box')).toEqual([
      {
        at: '2026-03-01T10:00:08.000Z',
        kind: 'action',
        summary: 'click (100, 200) (session planner) — refused: a person had control',
        tool: 'click',
        session: 'planner',
        point: { x: 100, y: 200 },
        error: "human_has_control: a human holds the control lease of sandbox box's desktop",
      },
    ]);
    w.dispose();
  });

  it('records nothing while replay.record is off', () => {
    const journal = new ReplayJournal(join(root, 'off'), () => false);
    journal.append('box', { at: 't', kind: 'command', summary: 'ls' });
    expect(journal.read('box')).toEqual([]);
  });
});
