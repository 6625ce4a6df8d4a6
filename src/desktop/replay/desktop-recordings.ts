import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxDeskError } from '../../shared/errors.js';
import { Emitter, type Event, type IDisposable } from '../../shared/lifecycle.js';
import { segmentStart } from './rfbrec-format.js';
import {
  ScreenRecorder,
  dirBytes,
  fsErrorText,
  type RecordingStatus,
  type RecordSource,
  type ScreenRecorderOptions,
} from './screen-recorder.js';

/**
 * Which desktops are being recorded, one recorder per sandbox across processes: the process that
 * records holds `<screen>/.recorder.lock` (its pid), so the app, `serve` and an MCP server on one data
 * dir never write the same segments; the others report the recording from the dir. A connection that
 * drops (an Xvnc restart) is reconnected and recording goes on; a desktop that is no longer running
 * ends the recording. `desktop start --no-record` leaves `<screen>/.no-record`, which every process
 * respects until a start without it.
 */

export interface DesktopRecordingsHost {
  /** `<dataDir>/recordings`: each sandbox's screen dir is `<dir>/<sandbox>/screen`. */
  dir: string;
  /** Config `replay.record` (default true). */
  enabled: boolean;
  /** The live connection of a running desktop (connecting if needed); throws desktop_not_running etc. */
  live(sandbox: string): Promise<RecordSource>;
  recorder?: Omit<ScreenRecorderOptions, 'dir'>;
  /** First retry after a dropped connection (doubles up to 10 s). */
  retryMs?: number;
  /**
   * A recording stopped on its own, or could not start (a full disk): said once per cause, for the
   * replay's events and the log. The desktop, and serving, go on either way.
   */
  onWarning?(sandbox: string, message: string): void;
  /**
   * Recording resumed after the process that recorded this screen died without stopping it (a
   * `kill -9` of the service): the screen was not recorded from its last write to now.
   */
  onGap?(sandbox: string, gap: RecordingGap): void;
}

/** A stretch a dead recorder left unrecorded: from its last write to the resumed recording's start. */
export interface RecordingGap {
  from: string;
  to: string;
  /** The recorder that died (its lock's pid). */
  pid: number;
}

const OFF = '.no-record';
const LOCK = '.recorder.lock';
const WARNING = '.recorder.warning';
/** Errors that mean the desktop is gone: recording ends rather than retrying. */
const GONE = new Set(['desktop_not_running', 'sandbox_not_running', 'sandbox_missing', 'not_found']);

interface Active {
  recorder: ScreenRecorder;
  subs: IDisposable[];
  retry: NodeJS.Timeout | undefined;
  retryMs: number;
}

export class DesktopRecordings implements IDisposable {
  private readonly active = new Map<string, Active>();
  private readonly changed = new Emitter<{ sandbox: string }>();
  /** A recording started, stopped (a warning says why when it stopped on its own) or began a segment. */
  readonly onDidChange: Event<{ sandbox: string }> = this.changed.event;

  constructor(private readonly host: DesktopRecordingsHost) {}

  screenDir(sandbox: string): string {
    return join(this.host.dir, sandbox, 'screen');
  }

  /** `--no-record` (false) or a start without it (true): remembered in the screen dir for every process. */
  setWanted(sandbox: string, wanted: boolean): void {
    const dir = this.screenDir(sandbox);
    if (wanted) rmSync(join(dir, OFF), { force: true });
    else {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, OFF), 'desktop start --no-record\n');
    }
  }

  private wanted(sandbox: string): boolean {
    return this.host.enabled && !existsSync(join(this.screenDir(sandbox), OFF));
  }

  /** Records the sandbox's running desktop unless it is off, or already recorded (here or by another process). */
  ensure(sandbox: string): void {
    if (this.active.has(sandbox) || !this.wanted(sandbox)) return;
    const dir = this.screenDir(sandbox);
    let recorder: ScreenRecorder;
    let taken: ReturnType<typeof takeLock>;
    try {
      taken = takeLock(dir);
      if (!taken) return;
    } catch (err) {
      // The screen dir or its lock cannot be written (disk full, read-only): no recording, said once;
      // this runs inside `desktop status` and `desktop start`, which must not fail for it.
      this.couldNotStart(sandbox, err);
      return;
    }
    try {
      rmSync(join(dir, WARNING), { force: true });
      recorder = new ScreenRecorder(dir, this.host.recorder);
    } catch (err) {
      rmSync(join(dir, LOCK), { force: true });
      this.couldNotStart(sandbox, err);
      return;
    }
    this.startFailed.delete(sandbox);
    const a: Active = { recorder, subs: [], retry: undefined, retryMs: this.host.retryMs ?? 1000 };
    this.active.set(sandbox, a);
    a.subs.push(
      recorder.onDidChange(() => {
        if (!recorder.status.on) void this.ended(sandbox, a);
        this.changed.fire({ sandbox });
      }),
    );
    this.connect(sandbox, a);
    this.changed.fire({ sandbox });
    if (taken.deadHolder) this.host.onGap?.(sandbox, { ...taken.deadHolder, to: new Date().toISOString() });
  }

  private connect(sandbox: string, a: Active): void {
    a.retry = undefined;
    this.host.live(sandbox).then(
      (src) => {
        if (this.active.get(sandbox) !== a) return;
        a.retryMs = this.host.retryMs ?? 1000;
        a.recorder.attach(src);
        // The connection drops (Xvnc restarted, the relay died): connect again, and recording goes on.
        const sub = src.onClose(() => {
          sub.dispose();
          this.later(sandbox, a);
        });
        a.subs.push(sub);
      },
      (err: unknown) => {
        if (this.active.get(sandbox) !== a) return;
        if (err instanceof SandboxDeskError && GONE.has(err.code)) void this.stop(sandbox);
        else this.later(sandbox, a);
      },
    );
  }

  private later(sandbox: string, a: Active): void {
    if (this.active.get(sandbox) !== a || a.retry) return;
    a.retry = setTimeout(() => this.connect(sandbox, a), a.retryMs);
    a.retry.unref();
    a.retryMs = Math.min(a.retryMs * 2, 10_000);
  }

  /** The recorder stopped on its own (disk full): keep the warning for every process, free the lock. */
  private async ended(sandbox: string, a: Active): Promise<void> {
    if (this.active.get(sandbox) !== a) return;
    const dir = this.screenDir(sandbox);
    const warning = a.recorder.status.warning;
    if (warning) {
      try {
        writeFileSync(join(dir, WARNING), warning);
      } catch {
        // The disk that stopped the recording may not take this file either: the warning stays in
        // this process's status and goes to onWarning; other processes see the recording off.
      }
      this.host.onWarning?.(sandbox, warning);
    }
    this.forget(sandbox, a);
    await a.recorder.flushed();
  }

  /** Sandboxes whose recording could not start, with why (said once per cause; retried at the next ensure). */
  private readonly startFailed = new Map<string, string>();

  private couldNotStart(sandbox: string, err: unknown): void {
    const warning = `screen recording could not start: ${fsErrorText(err)}; the desktop keeps running`;
    this.lastStatus.set(sandbox, { on: false, bytes: dirBytes(this.screenDir(sandbox)), since: null, warning });
    if (this.startFailed.get(sandbox) === warning) return;
    this.startFailed.set(sandbox, warning);
    this.host.onWarning?.(sandbox, warning);
    this.changed.fire({ sandbox });
  }

  private forget(sandbox: string, a: Active): void {
    clearTimeout(a.retry);
    for (const s of a.subs) s.dispose();
    this.active.delete(sandbox);
    rmSync(join(this.screenDir(sandbox), LOCK), { force: true });
    this.lastStatus.set(sandbox, a.recorder.status);
  }

  private readonly lastStatus = new Map<string, RecordingStatus>();

  /** Stops recording the sandbox (its desktop stops); what is queued is written first. */
  async stop(sandbox: string): Promise<void> {
    const a = this.active.get(sandbox);
    if (!a) return;
    this.forget(sandbox, a);
    await a.recorder.stop();
    this.lastStatus.set(sandbox, a.recorder.status);
    this.changed.fire({ sandbox });
  }

  /**
   * Removes the sandbox's screen recording (replayRemove): stops a recorder of this process first
   * (its open segment would live on unlinked), deletes the segments, and records again when it was
   * recording. `--no-record` stays. Returns the bytes removed.
   */
  async remove(sandbox: string): Promise<number> {
    const was = this.active.has(sandbox);
    await this.stop(sandbox);
    const dir = this.screenDir(sandbox);
    const bytes = dirBytes(dir);
    for (const name of existsSync(dir) ? readdirSync(dir) : []) {
      if (segmentStart(name) !== undefined) rmSync(join(dir, name), { force: true });
    }
    this.lastStatus.delete(sandbox);
    rmSync(join(dir, WARNING), { force: true });
    if (was) this.ensure(sandbox);
    return bytes;
  }

  /** What `desktop status` shows: this process's recorder, another process's (from its lock), or off. */
  status(sandbox: string): RecordingStatus {
    const a = this.active.get(sandbox);
    if (a) return a.recorder.status;
    const dir = this.screenDir(sandbox);
    const holder = lockHolder(dir);
    if (holder) return { on: true, bytes: dirBytes(dir), since: holder.since, warning: null };
    let warning: string | null = this.lastStatus.get(sandbox)?.warning ?? null;
    try {
      warning = readFileSync(join(dir, WARNING), 'utf8') || warning;
    } catch {
      // no warning left by another process
    }
    return { on: false, bytes: dirBytes(dir), since: null, warning };
  }

  async close(): Promise<void> {
    await Promise.all([...this.active.keys()].map((s) => this.stop(s)));
    this.changed.dispose();
  }

  dispose(): void {
    void this.close();
  }
}

/**
 * Takes the screen dir's lock for this process; false when a live process holds it. A lock left by a
 * process that is gone means that process was recording when it died: its pid and the time of its
 * last write (the newest segment's mtime) come back as `deadHolder`, the start of a gap.
 */
function takeLock(dir: string): false | { deadHolder: { pid: number; from: string } | null } {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, LOCK);
  let deadHolder: { pid: number; from: string } | null = null;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      try {
        writeSync(fd, JSON.stringify({ pid: process.pid, since: new Date().toISOString() }));
      } catch (err) {
        // A lock without its pid (the disk filled between open and write) would be nobody's: remove it.
        rmSync(file, { force: true });
        throw err;
      } finally {
        closeSync(fd);
      }
      return { deadHolder };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (lockHolder(dir)) return false;
      deadHolder = deadRecorder(dir, file);
      rmSync(file, { force: true }); // left by a process that is gone
    }
  }
  return false;
}

/** The dead recorder a left-over lock names, and when it last wrote; null for a lock of this process or without a pid. */
function deadRecorder(dir: string, lockFile: string): { pid: number; from: string } | null {
  try {
    const { pid } = JSON.parse(readFileSync(lockFile, 'utf8')) as { pid: unknown };
    if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0 || pid === process.pid) return null;
    let last = statSync(lockFile).mtimeMs;
    for (const name of readdirSync(dir)) if (segmentStart(name) !== undefined) last = Math.max(last, statSync(join(dir, name)).mtimeMs);
    return { pid, from: new Date(last).toISOString() };
  } catch {
    return null;
  }
}

function lockHolder(dir: string): { pid: number; since: string } | null {
  try {
    const raw = readFileSync(join(dir, LOCK), 'utf8');
    const { pid, since } = JSON.parse(raw) as { pid: number; since: string };
    if (!Number.isInteger(pid) || pid <= 0) return null;
    // This process's own recorders are in `active`; a lock with its pid otherwise is left over.
    if (pid === process.pid) return null;
    process.kill(pid, 0);
    return { pid, since: since ?? statSync(join(dir, LOCK)).mtime.toISOString() };
  } catch (err) {
    // EPERM: the process exists (another user's); anything else: no live holder.
    return (err as NodeJS.ErrnoException).code === 'EPERM' ? { pid: 0, since: new Date(0).toISOString() } : null;
  }
}
