import { describe, expect, it } from 'vitest';
import type { CallLogEntry } from '../shared/call-log-types.js';
import type { ReplayEvent } from '../shared/replay-types.js';
import { mergeAgentEvents } from './replay-events.js';

const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();

const call = (s: number, extra: Partial<CallLogEntry> = {}): CallLogEntry => ({
  id: 1,
  at: at(s),
  sandbox: 'box',
  session: 'agent',
  tool: 'execute_shell_command',
  cwdUsed: null,
  cwdObserved: null,
  exitCode: 0,
  warnings: [],
  error: null,
  durationMs: 500,
  ...extra,
});

const command = (s: number, summary: string, extra: Partial<ReplayEvent> = {}): ReplayEvent => ({
  at: at(s),
  kind: 'command',
  summary,
  session: 'agent',
  cwdUsed: '/home/user',
  cwdObserved: '/tmp/proj',
  exitCode: 0,
  ...extra,
});

describe('mergeAgentEvents: one row per agent action', () => {
  it("an MCP exec's call and its command are one row with the command's text, cwd used → observed, exit code and session", () => {
    const rows = mergeAgentEvents([call(10, { exitCode: 2 })], [command(10.1, 'cd /tmp/proj && false', { exitCode: 2 })]);
    expect(rows).toEqual([
      expect.objectContaining({
        at: at(10),
        kind: 'agentCall',
        summary: 'execute_shell_command: cd /tmp/proj && false',
        session: 'agent',
        cwdUsed: '/home/user',
        cwdObserved: '/tmp/proj',
        exitCode: 2,
      }),
    ]);
  });

  it('a call that named no session takes the command run in the default one; a command of another session is not its', () => {
    const rows = mergeAgentEvents(
      [call(10, { session: null }), call(20)],
      [command(10.2, 'ls', { session: 'default' }), command(20.1, 'pwd', { session: 'other' })],
    );
    expect(rows.map((e) => [e.kind, e.summary, e.session])).toEqual([
      ['agentCall', 'execute_shell_command: ls', 'default'],
      ['agentCall', 'execute_shell_command', 'agent'],
      ['command', 'pwd', 'other'],
    ]);
  });

  it('each command is claimed once: two quick calls in one session take one command each, in order', () => {
    const rows = mergeAgentEvents(
      [call(10, { durationMs: 2000 }), call(11, { durationMs: 2000 })],
      [command(10.1, 'first'), command(11.1, 'second')],
    );
    expect(rows.map((e) => e.summary)).toEqual(['execute_shell_command: first', 'execute_shell_command: second']);
  });

  it("a desktop action and its call are one row: the action's point and frame, the call's time and session", () => {
    const action: ReplayEvent = {
      at: at(40.02),
      kind: 'action',
      summary: 'click (412, 300)',
      tool: 'click',
      point: { x: 412, y: 300 },
      frameId: 'f1',
      frameAt: at(39),
    };
    const rows = mergeAgentEvents([call(40, { tool: 'click', exitCode: null, durationMs: 30 })], [action]);
    expect(rows).toEqual([{ ...action, at: at(40), session: 'agent', durationMs: 30 }]);
  });

  it('a refused call (no command ran), a CLI command (no call) and other journal events stay rows of their own', () => {
    const lease: ReplayEvent = { at: at(5), kind: 'lease', summary: 'control: the agent' };
    const rows = mergeAgentEvents(
      [call(1, { tool: 'click', error: 'human_has_control: a person has control', exitCode: null })],
      [lease, command(30, 'make', { session: 'default' })],
    );
    expect(rows.map((e) => [e.kind, e.summary])).toEqual([
      ['agentCall', 'click: human_has_control: a person has control'],
      ['lease', 'control: the agent'],
      ['command', 'make'],
    ]);
  });
});
