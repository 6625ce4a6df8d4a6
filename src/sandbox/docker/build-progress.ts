import type { ImageTaskEvent } from '../../shared/image-types.js';

/** Terminal colour and cursor sequences, which the builder puts around a step's stderr. */
// eslint-disable-next-line no-control-regex
const ANSI_RE = /\x1b\[[0-9;?]*[A-Za-z]/g;
export function stripAnsi(s: string): string {
  return s.replace(ANSI_RE, '');
}

/** One message of the Engine's build or pull stream (newline-delimited JSON). */
export interface EngineMessage {
  stream?: string;
  status?: string;
  id?: string;
  progressDetail?: { current?: number; total?: number };
  error?: string;
  errorDetail?: { message?: string };
  aux?: { ID?: string };
}

type Event = Omit<ImageTaskEvent, 'at'>;

/** Lines of a step's output kept for the error of a failing step (the rest is in the event stream). */
const TAIL_LINES = 30;

const STEP_RE = /^Step (\d+)\/(\d+) : (.*)$/;

/**
 * Turns the classic builder's stream into step/output/error events and remembers what a failure
 * needs: which step was running and the tail of its output. Fed whole JSON messages in order.
 */
export class BuildProgress {
  step: number | null = null;
  total: number | null = null;
  stepText = '';
  imageId: string | null = null;
  error: string | null = null;
  private tail: string[] = [];
  private partial = '';

  constructor(private readonly emit: (e: Event) => void) {}

  /** Feeds one engine message. */
  message(m: EngineMessage): void {
    if (m.aux?.ID) this.imageId = m.aux.ID;
    if (m.error !== undefined || m.errorDetail?.message !== undefined) {
      this.flush();
      this.error = (m.errorDetail?.message ?? m.error ?? 'the build failed').trim();
      this.emit({ kind: 'error', text: this.error, ...this.where() });
      return;
    }
    if (typeof m.stream === 'string') this.text(m.stream);
  }

  /** The engine writes partial lines: output is emitted per whole line, a step header as its own event. */
  private text(chunk: string): void {
    const lines = (this.partial + chunk).split('\n');
    this.partial = lines.pop() ?? '';
    // A step's stderr comes wrapped in colour codes (ESC[91m … ESC[0m): the text is what matters.
    for (const raw of lines) this.line(stripAnsi(raw).replace(/\r$/, ''));
  }

  private line(line: string): void {
    const s = STEP_RE.exec(line);
    if (s) {
      this.step = Number(s[1]);
      this.total = Number(s[2]);
      this.stepText = s[3]!;
      this.tail = [];
      this.emit({ kind: 'step', text: s[3]!, step: this.step, total: this.total });
      return;
    }
    // The builder's own bookkeeping (" ---> 1a2b", "Removing intermediate container") is not the step's output.
    if (/^ ---> |^(Removing intermediate container|Successfully built|Successfully tagged) /.test(line) || line === '') return;
    this.tail.push(line);
    if (this.tail.length > TAIL_LINES) this.tail.shift();
    this.emit({ kind: 'output', text: line, ...this.where() });
  }

  private flush(): void {
    if (this.partial) this.line(stripAnsi(this.partial));
    this.partial = '';
  }

  private where(): { step?: number; total?: number } {
    return this.step === null ? {} : { step: this.step, total: this.total ?? this.step };
  }

  /** The output of the step that was running last (bounded to its last lines). */
  stepOutput(): string[] {
    return [...this.tail];
  }

  /** true when the failing step's output (or the engine's error) says the disk is full. */
  outOfSpace(): boolean {
    const text = [this.error ?? '', ...this.tail].join('\n');
    return /no space left on device|ENOSPC|disk quota exceeded/i.test(text);
  }

  /** Ends the stream: anything left in a partial line becomes output. */
  end(): void {
    this.flush();
  }
}

/**
 * A pull's per-layer messages as progress events ("Downloading" with bytes), other statuses as output.
 */
export function pullEvent(m: EngineMessage): Event | null {
  if (m.error !== undefined) return { kind: 'error', text: (m.errorDetail?.message ?? m.error).trim() };
  if (!m.status) return null;
  const d = m.progressDetail;
  if (m.id && d && typeof d.current === 'number')
    return { kind: 'progress', text: m.status, layer: m.id, current: d.current, ...(d.total ? { layerTotal: d.total } : {}) };
  return { kind: 'output', text: m.id ? `${m.id}: ${m.status}` : m.status };
}

/** Splits a byte stream into JSON messages, one per line; a line that is not JSON becomes output text. */
export class JsonLines {
  private buf = '';
  constructor(private readonly onMessage: (m: EngineMessage) => void) {}

  push(chunk: Buffer | string): void {
    this.buf += chunk.toString();
    const lines = this.buf.split('\n');
    this.buf = lines.pop() ?? '';
    for (const l of lines) this.one(l);
  }

  end(): void {
    if (this.buf.trim()) this.one(this.buf);
    this.buf = '';
  }

  private one(line: string): void {
    if (!line.trim()) return;
    try {
      this.onMessage(JSON.parse(line) as EngineMessage);
    } catch {
      this.onMessage({ stream: line + '\n' });
    }
  }
}
