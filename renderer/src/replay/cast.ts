/**
 * Reading an asciicast v2 recording (https://docs.asciinema.org/manual/asciicast/v2/) for the replay
 * view's terminal: a header line, then `[seconds, code, data]` lines. Written here rather than taken
 * from asciinema-player because the view already has xterm.js (the live terminal's renderer): all it
 * needs is "the output up to t", fed to that terminal incrementally.
 */
export interface CastHeader {
  version: number;
  width: number;
  height: number;
  /** Unix seconds of the recording's start, when the file says. */
  timestamp?: number;
}

export interface CastEvent {
  /** Milliseconds since the recording's start. */
  t: number;
  code: string;
  data: string;
}

export interface Cast {
  header: CastHeader;
  /** ms since the epoch of t = 0 (the header's timestamp, else the fallback given). */
  originMs: number;
  events: CastEvent[];
}

/** Parses the text; lines that do not parse are skipped (a recording cut by a crash ends mid-line). */
export function parseCast(text: string, fallbackOriginMs = 0): Cast {
  const lines = text.split('\n');
  let header: CastHeader;
  try {
    header = JSON.parse(lines[0] ?? '') as CastHeader;
  } catch {
    throw new Error('not an asciicast file: the first line is not a JSON header');
  }
  if (!header || typeof header !== 'object' || header.version !== 2)
    throw new Error(`not an asciicast v2 file (version ${String(header?.version)})`);
  const events: CastEvent[] = [];
  for (const line of lines.slice(1)) {
    if (!line.trim()) continue;
    let e: unknown;
    try {
      e = JSON.parse(line);
    } catch {
      continue;
    }
    if (!Array.isArray(e) || typeof e[0] !== 'number' || typeof e[1] !== 'string' || typeof e[2] !== 'string') continue;
    events.push({ t: e[0] * 1000, code: e[1], data: e[2] });
  }
  const originMs = typeof header.timestamp === 'number' ? header.timestamp * 1000 : fallbackOriginMs;
  return { header, originMs, events };
}

/** What to do to a terminal to show the cast at a new time. */
export interface CastStep {
  /** Clear the terminal first (seeking backwards). */
  reset: boolean;
  /** The output to write, in order. */
  data: string;
  /** The terminal's size from the last resize event up to t, when there was one in what was fed. */
  size: { cols: number; rows: number } | null;
}

/**
 * Feeds a terminal incrementally: forward in time writes only the output since the last step;
 * backwards resets and writes from the start. One per terminal shown.
 */
export class CastFeeder {
  /** Index of the next event not yet written. */
  private next = 0;
  private at = -Infinity;

  constructor(private readonly cast: Cast) {}

  /** Step to the absolute time `atMs` (ms since the epoch). */
  seek(atMs: number): CastStep {
    const t = atMs - this.cast.originMs;
    const reset = t < this.at;
    if (reset) this.next = 0;
    this.at = t;
    const events = this.cast.events;
    let data = '';
    let size: CastStep['size'] = null;
    while (this.next < events.length && events[this.next]!.t <= t) {
      const e = events[this.next++]!;
      if (e.code === 'o') data += e.data;
      else if (e.code === 'r') {
        const m = /^(\d+)x(\d+)$/.exec(e.data);
        if (m) size = { cols: Number(m[1]), rows: Number(m[2]) };
      }
    }
    return { reset, data, size };
  }
}
