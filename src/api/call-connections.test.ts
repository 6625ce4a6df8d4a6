import { describe, expect, it } from 'vitest';
import type { CallLogEntry } from '../shared/call-log-types.js';
import type { NetworkLogEntry } from '../shared/network-policy.js';
import { linkCalls, markCalls } from './call-connections.js';

const call = (id: number, at: string, durationMs: number, session = 'default'): CallLogEntry => ({
  id,
  at,
  sandbox: 'sb',
  session,
  tool: 'execute_shell_command',
  cwdUsed: null,
  cwdObserved: null,
  exitCode: 0,
  warnings: [],
  error: null,
  durationMs,
});
const line = (at: string, host: string, proc?: { pid: number; ancestry: number[] }): NetworkLogEntry => ({
  at,
  sandbox: 'sb',
  host,
  port: 8000,
  verdict: 'allowed',
  kind: 'http',
  reason: null,
  process: proc ? `bash (pid ${proc.pid})` : null,
  ...(proc ?? {}),
});

describe('linking calls to the connections they made', () => {
  const calls = [call(1, '2026-01-01T00:00:00.000Z', 1000), call(2, '2026-01-01T00:00:02.000Z', 1000)];
  const spans = [
    { session: 'default', pid: 40, start: '2026-01-01T00:00:00.100Z', end: '2026-01-01T00:00:00.900Z' },
    { session: 'default', pid: 40, start: '2026-01-01T00:00:02.100Z', end: '2026-01-01T00:00:02.900Z' },
  ];
  const log = [
    line('2026-01-01T00:00:00.500Z', 'a', { pid: 41, ancestry: [40, 1] }), // the command's child
    line('2026-01-01T00:00:00.600Z', 'chromium', { pid: 77, ancestry: [70, 1] }), // another process, same moment
    line('2026-01-01T00:00:02.500Z', 'b'), // process unknown, in call 2's window
    line('2026-01-01T00:00:05.000Z', 'late', { pid: 41, ancestry: [40] }), // after every call
  ];

  it('by process where the process is known, by time where it is not; other processes are not the call’s', () => {
    const [c1, c2] = linkCalls(calls, 'sb', spans, log);
    expect(c1!.connections!.map((c) => [c.host, c.linkedBy])).toEqual([['a', 'process']]);
    expect(c2!.connections!.map((c) => [c.host, c.linkedBy])).toEqual([['b', 'window']]);
  });

  it('marks each log line with its call, and leaves the others unmarked', () => {
    expect(markCalls(log, calls, 'sb', spans).map((e) => e.callId)).toEqual([1, undefined, 2, undefined]);
  });

  it('back to back in one session shell: a connection right after a call belongs to the next command, not the call', () => {
    const c = [call(1, '2026-01-01T00:00:00.000Z', 600)];
    const sp = [
      { session: 'default', pid: 23, start: '2026-01-01T00:00:00.020Z', end: '2026-01-01T00:00:00.500Z' },
      { session: 'default', pid: 23, start: '2026-01-01T00:00:00.510Z', end: '2026-01-01T00:00:00.560Z' },
    ];
    const l = [
      line('2026-01-01T00:00:00.300Z', 'in', { pid: 23, ancestry: [] }),
      line('2026-01-01T00:00:00.530Z', 'next', { pid: 23, ancestry: [] }),
    ];
    expect(linkCalls(c, 'sb', sp, l)[0]!.connections!.map((x) => x.host)).toEqual(['in']);
  });

  it('calls in another sandbox are left as they are', () => {
    const other = { ...calls[0]!, sandbox: 'other' };
    expect(linkCalls([other], 'sb', spans, log)[0]).toBe(other);
  });
});
