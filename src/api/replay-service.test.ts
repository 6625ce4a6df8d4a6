import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SandboxDeskError } from '../shared/errors.js';
import type { CallLogEntry } from '../shared/call-log-types.js';
import type { ReplayScreenInfo } from '../shared/replay-types.js';
import { castProblems, parseCast } from '../session/cast-file.js';
import { ReplayJournal } from './replay-journal.js';
import { ReplayService, type ReplayHost } from './replay-service.js';
import type { ScreenRecordingApi } from './replay-screen.js';

const made: string[] = [];
afterAll(() => made.forEach((d) => rmSync(d, { recursive: true, force: true })));

const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();

/**
 * A stand-in for recscreen's screen functions (the seam's shapes): segments in memory per dir, each
 * with a start time and a size; a segment's file is made so the dir exists on disk.
 */
class FakeScreen implements ScreenRecordingApi {
  readonly segments = new Map<string, Array<{ startMs: number; endMs: number; bytes: number }>>();
  exports: Array<{ from: Date; to: Date; file: string }> = [];
  failExport: SandboxDeskError | null = null;
  add(dir: string, startS: number, endS: number, bytes: number): void {
    mkdirSync(dir, { recursive: true });
    const list = this.segments.get(dir) ?? [];
    list.push({ startMs: T0 + startS * 1000, endMs: T0 + endS * 1000, bytes });
    this.segments.set(dir, list);
  }
  screenRecordingInfo(dir: string): ReplayScreenInfo | null {
    const s = this.segments.get(dir);
    if (!s?.length) return null;
    return {
      startedAt: new Date(s[0]!.startMs).toISOString(),
      endedAt: new Date(s.at(-1)!.endMs).toISOString(),
      width: 1280,
      height: 800,
      keyframes: s.length,
      bytes: s.reduce((n, x) => n + x.bytes, 0),
    };
  }
  async renderScreenAt(dir: string, when: Date) {
    const s = this.screenRecordingInfo(dir);
    if (!s || when.getTime() < Date.parse(s.startedAt) || when.getTime() > Date.parse(s.endedAt))
      throw new SandboxDeskError('invalid_input', `outside ${s?.startedAt} – ${s?.endedAt}`);
    return { at: when.toISOString(), width: 640, height: 400, scale: 0.5, format: 'png' as const, data: 'iVBOR' };
  }
  trimScreenRecording(dir: string, keepBytes: number): number {
    const s = this.segments.get(dir) ?? [];
    let removed = 0;
    // Like the real one: the segment being written (the last) is never removed.
    while (s.length > 1 && s.reduce((n, x) => n + x.bytes, 0) > keepBytes) removed += s.shift()!.bytes;
    return removed;
  }
  async exportScreenVideo(_dir: string, opts: Parameters<ScreenRecordingApi['exportScreenVideo']>[1]) {
    if (this.failExport) throw this.failExport;
    this.exports.push({ from: opts.from, to: opts.to, file: opts.file });
    opts.onProgress?.(500, 1000);
    writeFileSync(opts.file, 'video');
    const gaps = this.screenGaps(_dir, opts.from.getTime(), opts.to.getTime()).map((g) => ({
      from: new Date(g.from).toISOString(),
      to: new Date(g.to).toISOString(),
      what: opts.describeGap?.(g) ?? 'not recorded',
    }));
    return { file: opts.file, format: opts.format, durationMs: opts.to.getTime() - opts.from.getTime(), width: 1280, height: 800, gaps };
  }
  /** Like the real one: between segments more than 10 s apart. */
  screenGaps(dir: string, from: number, to: number) {
    const s = this.segments.get(dir) ?? [];
    return s.slice(1).flatMap((next, i) => {
      const g = { from: s[i]!.endMs, to: next.startMs };
      return g.to - g.from > 10_000 && g.from < to && g.to > from ? [g] : [];
    });
  }
}

function setup(opts: { limitBytes?: number; calls?: CallLogEntry[]; operations?: Array<{ kind: string; startedAt: string }> } = {}) {
  const root = mkdtempSync(join(tmpdir(), 'sdesk-replay-'));
  made.push(root);
  const screen = new FakeScreen();
  const journal = new ReplayJournal(root);
  const changed: string[] = [];
  const ops: Array<{ kind: string; progress: Array<number | null>; end?: unknown }> = [];
  const active = new Set<string>();
  const host: ReplayHost = {
    root,
    limitBytes: opts.limitBytes ?? 1024 * 1024,
    screen,
    journal,
    calls: () => opts.calls ?? [],
    checkpoints: () => [{ id: 'cp1', label: 'before', createdAt: at(30) }],
    recordingTerminals: () => [...active],
    startOperation: (kind) => {
      const op: (typeof ops)[number] = { kind, progress: [] };
      ops.push(op);
      return { id: String(ops.length), progress: (_m, f) => op.progress.push(f ?? null), end: (e) => (op.end = e ?? null) };
    },
    changed: (s) => changed.push(s),
    operations: () => opts.operations ?? [],
  };
  return { root, screen, journal, changed, ops, active, svc: new ReplayService(host) };
}

/** A cast starting at T0 + startS (whole seconds) with output at the given offsets. */
function writeCast(root: string, sandbox: string, id: string, startS: number, outputs: Array<[number, string]>, session = 'default'): void {
  const dir = join(root, sandbox, 'terminals');
  mkdirSync(dir, { recursive: true });
  const header = { version: 2, width: 80, height: 24, timestamp: (T0 + startS * 1000) / 1000, env: { SANDBOX_DESK_SESSION: session } };
  writeFileSync(
    join(dir, `${id}.cast`),
    [JSON.stringify(header), ...outputs.map(([t, d]) => JSON.stringify([t, 'o', d]))].join('\n') + '\n',
  );
}

const call = (s: number, extra: Partial<CallLogEntry> = {}): CallLogEntry => ({
  id: 1,
  at: at(s),
  sandbox: 'box',
  session: 'default',
  tool: 'run_command',
  cwdUsed: '/home/user',
  cwdObserved: '/tmp/proj',
  exitCode: 0,
  warnings: [{ code: 'cwd_missing', message: 'fell back' }],
  error: null,
  durationMs: 400,
  ...extra,
});

describe('ReplayService', () => {
  it('lists a recording: screen, terminals, span, bytes, limit; nothing for an unrecorded sandbox', () => {
    const { root, screen, svc } = setup();
    screen.add(join(root, 'box', 'screen'), 0, 60, 1000);
    writeCast(root, 'box', 'ab12', 5, [
      [0.5, 'hi\r\n'],
      [70, 'late'],
    ]);
    const [r] = svc.list();
    expect(r).toMatchObject({
      sandbox: 'box',
      recording: false,
      startedAt: at(0),
      endedAt: at(75),
      limitBytes: 1024 * 1024,
      screen: { keyframes: 1, bytes: 1000 },
      terminals: [{ terminalId: 'ab12', session: 'default', startedAt: at(5), endedAt: at(75), cols: 80, rows: 24 }],
      warnings: [],
    });
    expect(r!.bytes).toBe(1000 + r!.terminals[0]!.bytes);
    expect(svc.list('other')).toEqual([]);
    expect(() => svc.list('../etc')).toThrow(/not a sandbox name/);
  });

  it('events: one row per agent action (a call with the command it ran, an action with its call), checkpoints — in order, filtered by time', () => {
    const { svc, journal } = setup({
      calls: [call(10), call(40, { tool: 'click', session: 'agent', cwdUsed: null, cwdObserved: null, durationMs: 20 })],
    });
    journal.append('box', {
      at: at(10.1),
      kind: 'command',
      summary: 'cd /tmp/proj && echo hi',
      session: 'default',
      cwdUsed: '/home/user',
      cwdObserved: '/tmp/proj',
      exitCode: 0,
    });
    journal.append('box', {
      at: at(40),
      kind: 'action',
      summary: 'click (412, 300)',
      tool: 'click',
      point: { x: 412, y: 300 },
      frameId: 'f1',
      frameAt: at(39),
    });
    const r = svc.events('box');
    expect(r.events.map((e) => [e.kind, e.summary])).toEqual([
      ['agentCall', 'run_command: cd /tmp/proj && echo hi'],
      ['checkpoint', 'checkpoint before'],
      ['action', 'click (412, 300)'],
    ]);
    expect(r.events[2]).toMatchObject({ session: 'agent', frameAt: at(39), point: { x: 412, y: 300 } });
    expect(r.events[0]).toMatchObject({
      session: 'default',
      cwdUsed: '/home/user',
      cwdObserved: '/tmp/proj',
      exitCode: 0,
      warnings: ['cwd_missing: fell back'],
    });
    expect(svc.events('box', { since: at(20), until: at(35) }).events.map((e) => e.kind)).toEqual(['checkpoint']);
    expect(() => svc.events('box', { since: 'yesterday' })).toThrow(/since "yesterday" is not a time/);
  });

  it('frame: the screen at t, with the sandbox and the time asked; no screen → not_found', async () => {
    const { root, screen, svc } = setup();
    writeCast(root, 'box', 'ab12', 0, [[1, 'x']]);
    await expect(svc.frame({ sandbox: 'box', at: at(1) })).rejects.toMatchObject({
      code: 'not_found',
      message: 'sandbox box has no screen recording',
    });
    screen.add(join(root, 'box', 'screen'), 0, 60, 1000);
    expect(await svc.frame({ sandbox: 'box', at: at(12), maxWidth: 640 })).toMatchObject({
      sandbox: 'box',
      askedAt: at(12),
      at: at(12),
      width: 640,
      format: 'png',
    });
    await expect(svc.frame({ sandbox: 'nothing', at: at(1) })).rejects.toMatchObject({ code: 'not_found' });
  });

  it('cast: the text of one terminal; a bad or unknown id is refused', () => {
    const { root, svc } = setup();
    writeCast(root, 'box', 'ab12', 0, [[1, 'x']]);
    expect(castProblems(svc.cast('box', 'ab12').cast)).toEqual([]);
    expect(() => svc.cast('box', '../../x')).toThrow(/not a terminal id/);
    expect(() => svc.cast('box', 'ffff')).toThrow(/no recording of terminal ffff/);
  });

  it('export: video, clipped casts with rebased times and events.jsonl; as a tracked operation with progress', async () => {
    const { root, screen, svc, journal, ops } = setup({ calls: [call(10), call(50)] });
    screen.add(join(root, 'box', 'screen'), 0, 60, 1000);
    writeCast(root, 'box', 'ab12', 0, [
      [5, 'before'],
      [21, 'inside'],
      [55, 'after'],
    ]);
    journal.append('box', { at: at(22), kind: 'lease', summary: 'control: human' });
    const out = join(root, 'out');
    const r = await svc.export({ sandbox: 'box', from: at(20), to: at(40), out, format: 'webm' });
    expect(r).toMatchObject({
      dir: out,
      from: at(20),
      to: at(40),
      casts: [join(out, 'terminal-ab12.cast')],
      events: join(out, 'events.jsonl'),
    });
    expect(r.video).toMatchObject({ file: join(out, 'screen.webm'), format: 'webm', durationMs: 20_000 });
    expect(screen.exports[0]).toMatchObject({ from: new Date(at(20)), to: new Date(at(40)) });
    const cast = readFileSync(r.casts[0]!, 'utf8');
    expect(castProblems(cast)).toEqual([]);
    expect(parseCast(cast)!.events).toEqual([[1, 'o', 'inside']]);
    expect(parseCast(cast)!.header.timestamp).toBe((T0 + 20_000) / 1000);
    const lines = readFileSync(r.events, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { kind: string });
    expect(lines.map((e) => e.kind)).toEqual(['lease', 'checkpoint']);
    expect(ops).toHaveLength(1);
    expect(ops[0]).toMatchObject({ kind: 'replay-export', end: null });
    expect(ops[0]!.progress).toContain(0.525);
    // The lock is gone afterwards: a second export runs.
    await svc.export({ sandbox: 'box', out: join(root, 'out2') });
  });

  it('export: a range outside the recording is invalid_input naming the span; from after to too', async () => {
    const { root, screen, svc } = setup();
    screen.add(join(root, 'box', 'screen'), 0, 60, 1000);
    await expect(svc.export({ sandbox: 'box', from: at(100), to: at(200), out: join(root, 'o') })).rejects.toMatchObject({
      code: 'invalid_input',
      message: `the range ${at(100)} – ${at(200)} is outside the recording of box (${at(0)} – ${at(60)})`,
    });
    await expect(svc.export({ sandbox: 'box', from: at(30), to: at(10), out: join(root, 'o') })).rejects.toMatchObject({
      code: 'invalid_input',
    });
    await expect(svc.export({ sandbox: 'none', out: join(root, 'o') })).rejects.toMatchObject({ code: 'not_found' });
  });

  it('export: an empty range, from after to, or one outside the recording is refused at once, saying what to do, before any operation or frame', async () => {
    const { root, screen, svc, ops } = setup();
    screen.add(join(root, 'box', 'screen'), 0, 60, 1000);
    const o = join(root, 'o');
    await expect(svc.export({ sandbox: 'box', from: at(30), to: at(30), out: o })).rejects.toMatchObject({
      code: 'invalid_input',
      message: `the range from ${at(30)} to ${at(30)} is empty`,
      hint: `give a to after the from, within the recording (${at(0)} – ${at(60)}); or leave them out for all of it`,
    });
    await expect(svc.export({ sandbox: 'box', from: at(40), to: at(10), out: o })).rejects.toMatchObject({
      code: 'invalid_input',
      message: `the range starts (from ${at(40)}) after it ends (to ${at(10)})`,
      hint: expect.stringContaining(`within the recording (${at(0)} – ${at(60)})`),
    });
    await expect(svc.export({ sandbox: 'box', from: at(-100), to: at(-50), out: o })).rejects.toMatchObject({
      code: 'invalid_input',
      hint: `give from/to within ${at(0)} – ${at(60)}, or leave them out for all of it`,
    });
    await expect(svc.export({ sandbox: 'box', from: 'yesterday', out: o })).rejects.toMatchObject({ code: 'invalid_input' });
    expect(ops).toEqual([]);
    expect(screen.exports).toEqual([]);
    expect(existsSync(o)).toBe(false);
  });

  it('export across a gap (the desktop restarted): the video is made, the gap is listed in events.jsonl with what it was', async () => {
    // The screen 0–20 s and 40–60 s; the desktop started again at 38 s.
    const { root, screen, svc, ops } = setup({ operations: [{ kind: 'desktop-start', startedAt: at(38) }] });
    screen.add(join(root, 'box', 'screen'), 0, 20, 1000);
    screen.add(join(root, 'box', 'screen'), 40, 60, 1000);
    const r = await svc.export({ sandbox: 'box', from: at(10), to: at(50), out: join(root, 'o') });
    expect(r.video).toMatchObject({
      durationMs: 40_000,
      gaps: [{ from: at(20), to: at(40), what: 'desktop not running (stopped, then started again)' }],
    });
    const lines = readFileSync(r.events, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { at: string; kind: string; summary: string; durationMs?: number });
    const gap = lines.find((e) => e.kind === 'recording');
    expect(gap).toEqual({
      at: at(20),
      kind: 'recording',
      summary: `screen not recorded from ${at(20)} to ${at(40)}: desktop not running (stopped, then started again) (the video shows a card there)`,
      durationMs: 20_000,
    });
    // In time order among the others (the checkpoint at 30 s comes after it).
    expect(lines.map((e) => e.kind)).toEqual(['recording', 'checkpoint']);
    expect(ops[0]).toMatchObject({ kind: 'replay-export', end: null });
  });

  it('export: a second export of one sandbox at once is refused (in this process and from another one)', async () => {
    const { root, screen, svc } = setup();
    screen.add(join(root, 'box', 'screen'), 0, 60, 1000);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const real = screen.exportScreenVideo.bind(screen);
    screen.exportScreenVideo = async (d, o) => {
      await gate;
      return real(d, o);
    };
    const first = svc.export({ sandbox: 'box', out: join(root, 'o1') });
    await expect(svc.export({ sandbox: 'box', out: join(root, 'o2') })).rejects.toMatchObject({
      code: 'refused',
      message: "an export of box's recording is already running",
    });
    // Another process's export: its lock file with a live pid (ours stands in for it).
    const other = new ReplayService({ ...(svc as unknown as { host: ReplayHost }).host });
    await expect(other.export({ sandbox: 'box', out: join(root, 'o3') })).rejects.toMatchObject({ code: 'refused' });
    release();
    await first;
    // A crashed exporter's lock (a pid that is not running) is taken over.
    writeFileSync(join(root, 'box', 'export.lock'), '999999999');
    await expect(other.export({ sandbox: 'box', out: join(root, 'o4') })).resolves.toMatchObject({ dir: join(root, 'o4') });
  });

  it('export: the video failing (ffmpeg missing) fails the operation with that error', async () => {
    const { root, screen, svc, ops } = setup();
    screen.add(join(root, 'box', 'screen'), 0, 60, 1000);
    screen.failExport = new SandboxDeskError('unsupported', 'ffmpeg is not installed', { hint: 'apt-get install ffmpeg' });
    await expect(svc.export({ sandbox: 'box', out: join(root, 'o') })).rejects.toMatchObject({ message: 'ffmpeg is not installed' });
    // The task list shows this line alone: it carries what to do.
    expect(ops[0]!.end).toEqual({ code: 'unsupported', message: 'ffmpeg is not installed — apt-get install ffmpeg' });
    expect(existsSync(join(root, 'box', 'export.lock'))).toBe(false);
  });

  it('export: a failed export removes what it wrote and the folder it made, so the same --out works again', async () => {
    const { root, screen, svc } = setup();
    screen.add(join(root, 'box', 'screen'), 0, 60, 1000);
    writeCast(root, 'box', 'aa01', 0, [[1, 'x']]);
    screen.failExport = new SandboxDeskError('unsupported', 'ffmpeg is not installed');
    await expect(svc.export({ sandbox: 'box', out: join(root, 'o') })).rejects.toMatchObject({ code: 'unsupported' });
    expect(existsSync(join(root, 'o'))).toBe(false);
    // An empty folder the person gave stays, emptied again.
    mkdirSync(join(root, 'given'));
    await expect(svc.export({ sandbox: 'box', out: join(root, 'given') })).rejects.toMatchObject({ code: 'unsupported' });
    expect(readdirSync(join(root, 'given'))).toEqual([]);
    screen.failExport = null;
    await expect(svc.export({ sandbox: 'box', out: join(root, 'o') })).resolves.toMatchObject({ dir: join(root, 'o') });
  });

  it('remove: everything but what is being written; the folder goes when nothing is', async () => {
    const { root, screen, svc, active, changed } = setup();
    screen.add(join(root, 'box', 'screen'), 0, 30, 1000);
    screen.add(join(root, 'box', 'screen'), 30, 60, 500);
    writeCast(root, 'box', 'aa01', 0, [[1, 'x']]);
    writeCast(root, 'box', 'aa02', 0, [[1, 'y']]);
    active.add('aa02');
    const r = await svc.remove('box');
    expect(r.removedBytes).toBeGreaterThan(1000);
    expect(svc.list('box')[0]!.terminals.map((t) => t.terminalId)).toEqual(['aa02']);
    expect(changed).toContain('box');
    active.clear();
    await svc.remove('box');
    expect(existsSync(join(root, 'box'))).toBe(false);
    await expect(svc.remove('box')).rejects.toThrow(/has no recording/);
  });

  it('the size limit removes the oldest first across screen segments and closed casts, and warns when only live parts are left', () => {
    const { root, screen, svc, active } = setup({ limitBytes: 1000 });
    screen.add(join(root, 'box', 'screen'), 10, 20, 400);
    screen.add(join(root, 'box', 'screen'), 20, 30, 400);
    screen.add(join(root, 'box', 'screen'), 30, 40, 400);
    writeCast(root, 'box', 'aa01', 0, [[1, 'x'.repeat(300)]]); // the oldest of all
    writeCast(root, 'box', 'aa02', 15, [[1, 'y'.repeat(300)]]);
    const removed = svc.enforceLimit('box');
    const r = svc.list('box')[0]!;
    expect(r.bytes).toBeLessThanOrEqual(1000);
    expect(removed).toBeGreaterThan(0);
    // aa01 (t=0) went first, then the screen's oldest segments (t=10, 20) before aa02 (t=15 but the screen started first).
    expect(r.terminals.map((t) => t.terminalId)).toEqual(['aa02']);
    expect(screen.segments.get(join(root, 'box', 'screen'))!.map((s) => s.startMs)).toEqual([T0 + 30_000]);
    // Over the limit with only live parts: a warning, no loop.
    active.add('aa02');
    const tight = new ReplayService({ ...(svc as unknown as { host: ReplayHost }).host, limitBytes: 100 });
    tight.enforceLimit('box');
    expect(tight.list('box')[0]!.warnings.at(-1)).toMatch(/over its limit .* with only what is being written left/);
  });

  it('a recorder warning (disk full) shows in the list and as a recording event', () => {
    const { root, svc } = setup();
    writeCast(root, 'box', 'aa01', 0, [[1, 'x']]);
    svc.warn('box', 'terminal aa01 recording stopped: disk full (ENOSPC); the terminal keeps working');
    expect(svc.list('box')[0]!.warnings).toEqual(['terminal aa01 recording stopped: disk full (ENOSPC); the terminal keeps working']);
    expect(svc.events('box').events.filter((e) => e.kind === 'recording')).toHaveLength(1);
  });
});
