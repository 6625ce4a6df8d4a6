import { closeSync, existsSync, openSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxDeskError } from '../shared/errors.js';
import { ExportFolder } from './export-folder.js';
import type { CallLogEntry } from '../shared/call-log-types.js';
import type { ReplayEvent, ReplayExportResult, ReplayFrame, ReplayRecording, ReplayTerminalInfo } from '../shared/replay-types.js';
import { clipCast, parseCast, readCastInfo } from '../session/cast-file.js';
import { mergeAgentEvents } from './replay-events.js';
import type { ReplayJournal } from './replay-journal.js';
import type { ScreenRecordingApi } from './replay-screen.js';
import type { TrackedOperation } from './operation-tracker.js';
import { describeGap, type GapOperation } from './replay-gaps.js';
import { processAlive } from '../platform/process-alive.js';

/** What the replay service reads and tells (the facade wires the stores; tests pass stand-ins). */
export interface ReplayHost {
  /** `<dataDir>/recordings`: one folder per sandbox. */
  root: string;
  /** Config `replay.maxBytesPerSandbox`. */
  limitBytes: number;
  screen: ScreenRecordingApi;
  journal: ReplayJournal;
  /** The sandbox's agent calls (the call log), oldest first. */
  calls(sandbox: string): CallLogEntry[];
  /** The sandbox's checkpoints (the checkpoint store). */
  checkpoints(sandbox: string): Array<{ id: string; label: string | null; createdAt: string }>;
  /** Terminals whose casts are being written now (SessionIo). */
  recordingTerminals(sandbox: string): string[];
  /** Is the screen being recorded now (recscreen's recorder)? */
  screenRecording?(sandbox: string): boolean;
  /** Removes the screen recording, stopping this process's recorder first (it records afresh if it was on); bytes removed. Absent: trimScreenRecording(dir, 0). */
  removeScreen?(sandbox: string): Promise<number>;
  /** Why the screen recording stopped on its own (disk full), if it did. */
  screenWarning?(sandbox: string): string | null;
  /** A tracked operation (src/api/operation-tracker.ts). */
  startOperation(kind: string, sandbox: string): TrackedOperation;
  /** The sandbox's recent tracked operations (restore, desktop-start …): they name what a screen gap was. */
  operations?(sandbox: string): GapOperation[];
  /** Tell clients the recording changed (the `replay` CoreEvent topic). */
  changed(sandbox: string): void;
}

const TERMINAL_ID = /^[0-9a-f]{1,64}$/;
/** A sandbox name as the store allows it (and nothing that walks out of the recordings folder). */
const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function parseTime(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms))
    throw new SandboxDeskError('invalid_input', `${name} ${JSON.stringify(value)} is not a time`, {
      hint: 'give an ISO 8601 time, e.g. 2026-01-02T03:04:05Z',
    });
  return ms;
}

/** A gap in the screen as an event of the export's events.jsonl (kind `recording`, as a recording's warnings are). */
function gapEvent(g: { from: number; to: number }, what: string): ReplayEvent {
  return {
    at: iso(g.from),
    kind: 'recording',
    summary: `screen not recorded from ${iso(g.from)} to ${iso(g.to)}: ${what} (the video shows a card there)`,
    durationMs: g.to - g.from,
  };
}

/**
 * Replay (issue 16): a sandbox's recording — its screen (recscreen's segments), its terminals
 * (asciicast v2 casts) and its events (the call log, checkpoints and events.jsonl) — on one clock,
 * wall time. Lists, reads, renders, exports, removes, and keeps each sandbox within its size limit
 * (oldest first across screen segments and casts).
 *
 * A removed sandbox's recording stays until `replay rm`: the audit trail outlives the sandbox it
 * describes (a sandbox made again under the same name continues the same timeline).
 */
export class ReplayService {
  /** Warnings of this process's recorders (disk full …), per sandbox; also appended to events.jsonl. */
  private readonly warnings = new Map<string, string[]>();
  private readonly exporting = new Set<string>();

  constructor(private readonly host: ReplayHost) {}

  private dir(sandbox: string): string {
    if (!SAFE_NAME.test(sandbox)) throw new SandboxDeskError('invalid_input', `${JSON.stringify(sandbox)} is not a sandbox name`);
    return join(this.host.root, sandbox);
  }

  private screenDir(sandbox: string): string {
    return join(this.dir(sandbox), 'screen');
  }

  private castFile(sandbox: string, terminalId: string): string {
    return join(this.dir(sandbox), 'terminals', `${terminalId}.cast`);
  }

  /** A recorder stopped early (disk full): said in `list` and as a `recording` event. */
  warn(sandbox: string, message: string): void {
    const list = this.warnings.get(sandbox) ?? [];
    list.push(message);
    this.warnings.set(sandbox, list);
    this.host.journal.append(sandbox, { at: new Date().toISOString(), kind: 'recording', summary: message, warnings: [message] });
    this.host.changed(sandbox);
  }

  /**
   * The screen was not recorded from `gap.from` to `gap.to`: the process recording it (pid) died, and
   * a new one resumed. A `recording` event at the gap's start, so the timeline shows where and why.
   */
  markGap(sandbox: string, gap: { from: string; to: string; pid: number }): void {
    const secs = Math.max(0, (Date.parse(gap.to) - Date.parse(gap.from)) / 1000).toFixed(1);
    const summary = `screen not recorded from ${gap.from} to ${gap.to} (${secs} s): the process recording it (pid ${gap.pid}) ended without stopping; recording resumed`;
    this.host.journal.append(sandbox, { at: gap.from, kind: 'recording', summary, durationMs: Date.parse(gap.to) - Date.parse(gap.from) });
    this.host.changed(sandbox);
  }

  private terminals(sandbox: string): ReplayTerminalInfo[] {
    const dir = join(this.dir(sandbox), 'terminals');
    let names: string[];
    try {
      names = readdirSync(dir).filter((n) => n.endsWith('.cast'));
    } catch {
      return [];
    }
    const out: ReplayTerminalInfo[] = [];
    for (const n of names) {
      const info = readCastInfo(join(dir, n));
      if (!info) continue;
      out.push({
        terminalId: n.slice(0, -'.cast'.length),
        session: info.header.env?.SANDBOX_DESK_SESSION ?? null,
        startedAt: iso(info.startMs),
        endedAt: iso(info.endMs),
        cols: info.header.width,
        rows: info.header.height,
        bytes: info.bytes,
      });
    }
    return out.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
  }

  private fileBytes(file: string): number {
    try {
      return statSync(file).size;
    } catch {
      return 0;
    }
  }

  /** One sandbox's recording as it is on disk now (null when nothing was recorded). */
  recording(sandbox: string): ReplayRecording | null {
    const dir = this.dir(sandbox);
    if (!existsSync(dir)) return null;
    const screen = this.host.screen.screenRecordingInfo(this.screenDir(sandbox));
    const terminals = this.terminals(sandbox);
    const journal = this.host.journal.read(sandbox);
    const times = [
      ...(screen ? [screen.startedAt, screen.endedAt] : []),
      ...terminals.flatMap((t) => [t.startedAt, t.endedAt]),
      ...journal.map((e) => e.at),
    ].sort();
    const warnings = [
      ...new Set([
        ...journal.filter((e) => e.kind === 'recording').flatMap((e) => e.warnings ?? []),
        ...(this.warnings.get(sandbox) ?? []),
        ...(screen ? [this.host.screenWarning?.(sandbox)].filter((w): w is string => !!w) : []),
      ]),
    ];
    return {
      sandbox,
      recording: this.host.recordingTerminals(sandbox).length > 0 || (this.host.screenRecording?.(sandbox) ?? false),
      startedAt: times[0] ?? null,
      endedAt: times.at(-1) ?? null,
      bytes: (screen?.bytes ?? 0) + terminals.reduce((n, t) => n + t.bytes, 0) + this.fileBytes(this.host.journal.file(sandbox)),
      limitBytes: this.host.limitBytes,
      screen,
      terminals,
      warnings,
    };
  }

  /** Every sandbox's recording (or one sandbox's), by name. */
  list(sandbox?: string): ReplayRecording[] {
    if (sandbox !== undefined) {
      const r = this.recording(sandbox);
      return r ? [r] : [];
    }
    let names: string[];
    try {
      names = readdirSync(this.host.root).filter((n) => SAFE_NAME.test(n));
    } catch {
      return [];
    }
    return names
      .sort()
      .map((n) => this.recording(n))
      .filter((r): r is ReplayRecording => r !== null);
  }

  private mustHave(sandbox: string): ReplayRecording {
    const r = this.recording(sandbox);
    if (!r)
      throw new SandboxDeskError('not_found', `sandbox ${sandbox} has no recording`, {
        hint: 'recording is on by default (config replay.record); `sandbox-desk replay list` shows what is recorded',
      });
    return r;
  }

  /**
   * What happened, on the recording's clock, oldest first: agent calls (the call log), commands,
   * desktop actions, lease changes, restores, forks, network policy changes and recording warnings
   * (events.jsonl), checkpoints (their store). An agent call and the command or desktop action it
   * made are one event (mergeAgentEvents).
   */
  events(sandbox: string, range: { since?: string | undefined; until?: string | undefined } = {}) {
    const since = parseTime(range.since, 'since');
    const until = parseTime(range.until, 'until');
    const rec = this.recording(sandbox);
    const inRange = (at: string) => {
      const ms = Date.parse(at);
      return (since === undefined || ms >= since) && (until === undefined || ms <= until);
    };
    // One row per agent action: a call carries the command it ran, an action the call that made it.
    const acts = mergeAgentEvents(this.host.calls(sandbox), this.host.journal.read(sandbox));
    const checkpoints: ReplayEvent[] = this.host.checkpoints(sandbox).map((c) => ({
      at: c.createdAt,
      kind: 'checkpoint',
      summary: `checkpoint ${c.label ?? c.id}`,
    }));
    const events = [...acts, ...checkpoints].filter((e) => inRange(e.at)).sort((a, b) => a.at.localeCompare(b.at));
    return { sandbox, startedAt: rec?.startedAt ?? null, endedAt: rec?.endedAt ?? null, events };
  }

  /** The recorded screen at `at`. */
  async frame(input: {
    sandbox: string;
    at: string;
    maxWidth?: number | undefined;
    maxHeight?: number | undefined;
    format?: 'png' | 'jpeg' | 'webp' | undefined;
  }): Promise<ReplayFrame> {
    const at = parseTime(input.at, 'at')!;
    const rec = this.mustHave(input.sandbox);
    if (!rec.screen)
      throw new SandboxDeskError('not_found', `sandbox ${input.sandbox} has no screen recording`, {
        hint: 'the screen is recorded while its desktop runs with recording on (`desktop start` without --no-record)',
      });
    const opts: { maxWidth?: number; maxHeight?: number; format?: 'png' | 'jpeg' | 'webp' } = {};
    if (input.maxWidth !== undefined) opts.maxWidth = input.maxWidth;
    if (input.maxHeight !== undefined) opts.maxHeight = input.maxHeight;
    if (input.format !== undefined) opts.format = input.format;
    const f = await this.host.screen.renderScreenAt(this.screenDir(input.sandbox), new Date(at), opts);
    return { ...f, sandbox: input.sandbox, askedAt: iso(at) };
  }

  /** One terminal's asciicast v2 text. */
  cast(sandbox: string, terminalId: string): { cast: string } {
    if (!TERMINAL_ID.test(terminalId)) throw new SandboxDeskError('invalid_input', `${JSON.stringify(terminalId)} is not a terminal id`);
    try {
      return { cast: readFileSync(this.castFile(sandbox, terminalId), 'utf8') };
    } catch {
      throw new SandboxDeskError('not_found', `sandbox ${sandbox} has no recording of terminal ${terminalId}`, {
        hint: '`sandbox-desk replay list NAME` lists its recorded terminals',
      });
    }
  }

  /**
   * Writes the range to `out`: the screen as `screen.mp4|webm`, each terminal as
   * `terminal-<id>.cast` (clipped, times from the range's start) and `events.jsonl`. A tracked
   * operation with progress; one export per sandbox at a time (across processes: a lock file).
   */
  async export(
    input: { sandbox: string; from?: string | undefined; to?: string | undefined; out: string; format?: 'mp4' | 'webm' | undefined },
    opts: { signal?: AbortSignal | undefined; onProgress?: ((message: string, fraction: number | null) => void) | undefined } = {},
  ): Promise<ReplayExportResult> {
    const rec = this.mustHave(input.sandbox);
    if (!rec.startedAt || !rec.endedAt) throw new SandboxDeskError('not_found', `the recording of ${input.sandbox} is empty`);
    const span = `${rec.startedAt} – ${rec.endedAt}`;
    const startMs = Date.parse(rec.startedAt);
    const endMs = Date.parse(rec.endedAt);
    const from = parseTime(input.from, 'from') ?? startMs;
    const to = parseTime(input.to, 'to') ?? endMs;
    // All of it checked here, before a lock, an operation or a frame: a bad range fails at once, not at 49 %.
    if (from > to)
      throw new SandboxDeskError('invalid_input', `the range starts (from ${iso(from)}) after it ends (to ${iso(to)})`, {
        hint: `give a from before the to, both within the recording (${span}); or leave them out for all of it`,
      });
    if (from === to && (input.from !== undefined || input.to !== undefined))
      throw new SandboxDeskError('invalid_input', `the range from ${iso(from)} to ${iso(to)} is empty`, {
        hint: `give a to after the from, within the recording (${span}); or leave them out for all of it`,
      });
    if (to < startMs || from > endMs)
      throw new SandboxDeskError(
        'invalid_input',
        `the range ${iso(from)} – ${iso(to)} is outside the recording of ${input.sandbox} (${span})`,
        {
          hint: `give from/to within ${span}, or leave them out for all of it`,
        },
      );
    if (!input.out.trim()) throw new SandboxDeskError('invalid_input', '--out must name a folder', { hint: 'e.g. --out ./replay-export' });
    const format = input.format ?? 'mp4';
    const lock = this.takeExportLock(input.sandbox);
    const op = this.host.startOperation('replay-export', input.sandbox);
    const progress = (message: string, fraction: number | null) => {
      op.progress(message, fraction);
      opts.onProgress?.(message, fraction);
    };
    let folder: ExportFolder | null = null;
    try {
      folder = ExportFolder.open(input.out);
      const out = folder.dir;
      const casts: string[] = [];
      progress('terminals and events', 0);
      for (const t of rec.terminals) {
        const parsed = parseCast(this.cast(input.sandbox, t.terminalId).cast);
        const clipped = parsed && clipCast(parsed, from, to);
        if (!clipped) continue;
        casts.push(folder.write(`terminal-${t.terminalId}.cast`, clipped));
      }
      const s = rec.screen;
      const hasScreen = s !== null && Date.parse(s.startedAt) <= to && Date.parse(s.endedAt) >= from;
      const vFrom = hasScreen ? Math.max(from, Date.parse(s.startedAt)) : from;
      const vTo = hasScreen ? Math.min(to, Date.parse(s.endedAt)) : to;
      // Where the screen was not recorded the video shows a card; the events say so too, in words.
      const ops = this.host.operations?.(input.sandbox) ?? [];
      const what = (g: { from: number; to: number }) => describeGap(g, ops);
      const gaps = hasScreen ? this.host.screen.screenGaps(this.screenDir(input.sandbox), vFrom, vTo) : [];
      const { events } = this.events(input.sandbox, { since: iso(from), until: iso(to) });
      const all = [...events, ...gaps.map((g) => gapEvent(g, what(g)))].sort((a, b) => a.at.localeCompare(b.at));
      const eventsFile = folder.write('events.jsonl', all.map((e) => JSON.stringify(e)).join('\n') + (all.length ? '\n' : ''));
      let video: ReplayExportResult['video'] = null;
      if (hasScreen) {
        const videoOpts: Parameters<ScreenRecordingApi['exportScreenVideo']>[1] = {
          from: new Date(vFrom),
          to: new Date(vTo),
          file: folder.path(`screen.${format}`),
          format,
          describeGap: what,
          onProgress: (done, total) =>
            progress(`screen ${Math.round(done / 1000)} of ${Math.round(total / 1000)} s`, total > 0 ? 0.05 + (0.95 * done) / total : null),
        };
        if (opts.signal) videoOpts.signal = opts.signal;
        video = await this.host.screen.exportScreenVideo(this.screenDir(input.sandbox), videoOpts);
      }
      op.end();
      return { dir: out, video, casts, events: eventsFile, from: iso(from), to: iso(to) };
    } catch (err) {
      folder?.discard();
      const e = err instanceof SandboxDeskError ? err : new SandboxDeskError('internal', err instanceof Error ? err.message : String(err));
      // The task list shows this line alone: what went wrong and what to do.
      op.end({ code: e.code, message: e.oneLine() });
      throw e;
    } finally {
      lock();
    }
  }

  /** One export per sandbox: in this process by a set, across processes by `<dir>/export.lock` (with the holder's pid). */
  private takeExportLock(sandbox: string): () => void {
    const busy = () =>
      new SandboxDeskError('refused', `an export of ${sandbox}'s recording is already running`, {
        hint: 'wait for it to finish (its progress is in the task list), then export again',
      });
    if (this.exporting.has(sandbox)) throw busy();
    const file = join(this.dir(sandbox), 'export.lock');
    for (let attempt = 0; ; attempt++) {
      try {
        const fd = openSync(file, 'wx');
        writeFileSync(fd, String(process.pid));
        closeSync(fd);
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw busy();
        const holder = Number(readFileSync(file, 'utf8').trim());
        if (Number.isInteger(holder) && holder > 0 && processAlive(holder)) throw busy();
        // A crashed exporter's lock: take it over.
        rmSync(file, { force: true });
      }
    }
    this.exporting.add(sandbox);
    return () => {
      this.exporting.delete(sandbox);
      rmSync(file, { force: true });
    };
  }

  /**
   * Removes a sandbox's recording. What is being written now (an open terminal's cast, the screen's
   * current segment) stays, so a running recorder is never cut; everything else goes.
   */
  async remove(sandbox: string): Promise<{ removedBytes: number }> {
    const before = this.recording(sandbox);
    if (!before) throw new SandboxDeskError('not_found', `sandbox ${sandbox} has no recording`);
    if (this.exporting.has(sandbox))
      throw new SandboxDeskError('refused', `an export of ${sandbox}'s recording is running`, { hint: 'remove it after the export' });
    const active = new Set(this.host.recordingTerminals(sandbox));
    let removed = 0;
    for (const t of before.terminals) {
      if (active.has(t.terminalId)) continue;
      rmSync(this.castFile(sandbox, t.terminalId), { force: true });
      removed += t.bytes;
    }
    if (before.screen)
      removed += this.host.removeScreen
        ? await this.host.removeScreen(sandbox)
        : this.host.screen.trimScreenRecording(this.screenDir(sandbox), 0);
    const journal = this.host.journal.file(sandbox);
    removed += this.fileBytes(journal);
    rmSync(journal, { force: true });
    this.warnings.delete(sandbox);
    if (active.size === 0 && !(this.host.screenRecording?.(sandbox) ?? false)) {
      // Nothing is being written: the folder goes too (whatever else is in it, e.g. an empty screen dir).
      rmSync(this.dir(sandbox), { recursive: true, force: true });
    }
    this.host.changed(sandbox);
    return { removedBytes: removed };
  }

  /**
   * Keeps a sandbox within `limitBytes`: removes the oldest first — a closed terminal's cast, or the
   * screen's oldest segments — until it fits or only what is being written is left (then it says so).
   * Returns the bytes removed.
   */
  enforceLimit(sandbox: string): number {
    let removed = 0;
    for (let round = 0; round < 1000; round++) {
      const rec = this.recording(sandbox);
      if (!rec || rec.bytes <= rec.limitBytes) break;
      const excess = rec.bytes - rec.limitBytes;
      const active = new Set(this.host.recordingTerminals(sandbox));
      const oldestCast = rec.terminals.find((t) => !active.has(t.terminalId));
      const screenFirst = rec.screen && (!oldestCast || rec.screen.startedAt <= oldestCast.startedAt);
      let n = 0;
      if (screenFirst && rec.screen)
        n = this.host.screen.trimScreenRecording(this.screenDir(sandbox), Math.max(0, rec.screen.bytes - excess));
      if (n === 0 && oldestCast) {
        unlinkSync(this.castFile(sandbox, oldestCast.terminalId));
        n = oldestCast.bytes;
      }
      if (n === 0 && !screenFirst && rec.screen)
        n = this.host.screen.trimScreenRecording(this.screenDir(sandbox), Math.max(0, rec.screen.bytes - excess));
      if (n === 0) {
        const msg = `the recording of ${sandbox} is over its limit (${rec.bytes} of ${rec.limitBytes} bytes) with only what is being written left`;
        if (!(this.warnings.get(sandbox) ?? []).includes(msg)) this.warn(sandbox, msg);
        break;
      }
      removed += n;
    }
    if (removed > 0) this.host.changed(sandbox);
    return removed;
  }

  /** enforceLimit for every recorded sandbox (the facade runs it now and then). */
  enforceLimits(): void {
    let names: string[];
    try {
      names = readdirSync(this.host.root).filter((n) => SAFE_NAME.test(n));
    } catch {
      return;
    }
    for (const n of names) {
      try {
        this.enforceLimit(n);
      } catch {
        /* a folder removed meanwhile */
      }
    }
  }
}
