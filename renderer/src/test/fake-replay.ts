import type { ApiClient } from '../../../src/api/contract.js';
import type { ReplayEvent, ReplayFrame, ReplayRecording } from '../../../src/shared/replay-types.js';
import { ApiError } from '../app/api-client.js';
import type { ReplayMethod, ReplayMethods } from '../replay/replay-api.js';

/** t seconds after the fake recording's start, as epoch ms and as ISO. */
export const START = Date.parse('2026-01-01T10:00:00.000Z');
export const T = (s: number) => START + s * 1000;
export const iso = (s: number) => new Date(T(s)).toISOString();

/** A one-pixel PNG, so <img> gets a real data URL. */
const PIXEL = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

/**
 * The replay methods over a FakeApi (component tests): a 20-second recording of a screen and one or
 * two terminals, with a `cd`, a typed text and a click. Each method may be replaced (`on`).
 */
export class FakeReplay implements ApiClient {
  readonly calls: Array<{ method: string; params: unknown }> = [];
  recording: ReplayRecording = {
    sandbox: 'box',
    recording: true,
    startedAt: iso(0),
    endedAt: iso(20),
    bytes: 123456,
    limitBytes: 1 << 30,
    screen: { startedAt: iso(0), endedAt: iso(20), width: 1280, height: 800, keyframes: 3, bytes: 100000 },
    terminals: [{ terminalId: 'aa11bb22cc33', session: 'default', startedAt: iso(0), endedAt: iso(20), cols: 80, rows: 24, bytes: 300 }],
    warnings: [],
  };
  events: ReplayEvent[] = [
    {
      at: iso(2),
      kind: 'agentCall',
      summary: 'run_command: cd /tmp/proj',
      tool: 'run_command',
      session: 'default',
      terminalId: 'aa11bb22cc33',
      cwdUsed: '/home/dev',
      cwdObserved: '/tmp/proj',
      exitCode: 0,
      warnings: [],
    },
    { at: iso(6), kind: 'action', summary: 'type "hello"', tool: 'desktop_type' },
    { at: iso(10), kind: 'action', summary: 'click (640, 400)', tool: 'desktop_click', point: { x: 640, y: 400 }, frameAt: iso(9) },
    {
      at: iso(14),
      kind: 'command',
      summary: 'ls nope',
      cwdUsed: '/tmp/proj',
      cwdObserved: '/tmp/proj',
      exitCode: 2,
      warnings: ['dead cwd walked up'],
    },
  ];
  casts: Record<string, string> = {
    aa11bb22cc33: [
      JSON.stringify({ version: 2, width: 80, height: 24, timestamp: START / 1000 }),
      JSON.stringify([2.1, 'o', '$ cd /tmp/proj\r\n']),
      JSON.stringify([14.1, 'o', '$ ls nope\r\nls: cannot access nope\r\n']),
    ].join('\n'),
  };
  private readonly overrides: Partial<Record<ReplayMethod, (p: never) => unknown>> = {};

  constructor(private readonly base: ApiClient) {}

  on<M extends ReplayMethod>(
    method: M,
    fn: (p: ReplayMethods[M]['params']) => ReplayMethods[M]['result'] | Promise<ReplayMethods[M]['result']>,
  ): this {
    this.overrides[method] = fn;
    return this;
  }

  callsOf(method: string): unknown[] {
    return this.calls.filter((c) => c.method === method).map((c) => c.params);
  }

  private readonly replay: { [M in ReplayMethod]: (p: ReplayMethods[M]['params']) => ReplayMethods[M]['result'] } = {
    replayList: () => ({ recordings: [this.recording] }),
    replayEvents: (p) => ({
      sandbox: p.sandbox,
      startedAt: this.recording.startedAt,
      endedAt: this.recording.endedAt,
      events: this.events,
    }),
    replayFrame: (p): ReplayFrame => {
      const t = Date.parse(p.at);
      if (t < T(0) || t > T(20)) throw new ApiError('invalid_input', `no screen at ${p.at}: the recording spans ${iso(0)} … ${iso(20)}`);
      return { sandbox: p.sandbox, askedAt: p.at, at: p.at, width: 640, height: 400, scale: 0.5, format: 'png', data: PIXEL };
    },
    replayCast: (p) => {
      const cast = this.casts[p.terminalId];
      if (!cast) throw new ApiError('not_found', `no recorded terminal ${p.terminalId}`);
      return { cast };
    },
    replayExport: (p) => ({
      dir: p.out,
      video: {
        file: `${p.out}/screen.${p.format ?? 'mp4'}`,
        format: p.format ?? 'mp4',
        durationMs: 20000,
        width: 1280,
        height: 800,
        gaps: [],
      },
      casts: [`${p.out}/aa11bb22cc33.cast`],
      events: `${p.out}/events.jsonl`,
      from: iso(0),
      to: iso(20),
    }),
  };

  call: ApiClient['call'] = async (method, params) => {
    const name = String(method) as ReplayMethod;
    if (name in this.replay) {
      this.calls.push({ method: name, params });
      await Promise.resolve();
      const fn = (this.overrides[name] ?? this.replay[name]) as (p: unknown) => unknown;
      return (await fn(params)) as never;
    }
    return this.base.call(method, params);
  };
}
