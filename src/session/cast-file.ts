import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import type { CastHeader } from './terminal-cast.js';

/**
 * Reading the asciicast v2 files terminal-cast.ts writes: their span without reading them whole,
 * and a range of one, clipped and rebased, for export. A last line cut by a crash is skipped — the
 * rest of the file is what the recording was.
 */

export type CastEvent = [number, string, string];

export interface ParsedCast {
  header: CastHeader;
  events: CastEvent[];
}

function isEvent(v: unknown): v is CastEvent {
  return Array.isArray(v) && v.length === 3 && typeof v[0] === 'number' && typeof v[1] === 'string' && typeof v[2] === 'string';
}

function parseHeader(line: string): CastHeader | null {
  try {
    const h = JSON.parse(line) as Partial<CastHeader>;
    if (h.version !== 2 || typeof h.width !== 'number' || typeof h.height !== 'number') return null;
    return { ...h, timestamp: typeof h.timestamp === 'number' ? h.timestamp : 0 } as CastHeader;
  } catch {
    return null;
  }
}

/** The header and every whole event line; null when the file is not an asciicast v2. */
export function parseCast(text: string): ParsedCast | null {
  const lines = text.split('\n');
  const header = parseHeader(lines[0] ?? '');
  if (!header) return null;
  const events: CastEvent[] = [];
  for (const l of lines.slice(1)) {
    if (!l.trim()) continue;
    try {
      const e = JSON.parse(l) as unknown;
      if (isEvent(e)) events.push(e);
    } catch {
      // a line cut by a crash or a full disk: the file ends here
      break;
    }
  }
  return { header, events };
}

export interface CastInfo {
  header: CastHeader;
  /** Wall times (ms) of the header and of the last whole event. */
  startMs: number;
  endMs: number;
  bytes: number;
}

/** Reads the first line and the last whole line only: a cast can be hundreds of MiB. */
export function readCastInfo(file: string): CastInfo | null {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return null;
  }
  try {
    const size = fstatSync(fd).size;
    const headBuf = Buffer.alloc(Math.min(size, 16 * 1024));
    readSync(fd, headBuf, 0, headBuf.length, 0);
    const head = headBuf.toString('utf8');
    const nl = head.indexOf('\n');
    const header = parseHeader(nl >= 0 ? head.slice(0, nl) : head);
    if (!header) return null;
    const startMs = header.timestamp * 1000;
    const tailLen = Math.min(size, 256 * 1024);
    const tailBuf = Buffer.alloc(tailLen);
    readSync(fd, tailBuf, 0, tailLen, size - tailLen);
    const lines = tailBuf.toString('utf8').split('\n');
    let endMs = startMs;
    for (let i = lines.length - 1; i >= 0; i--) {
      try {
        const e = JSON.parse(lines[i]!) as unknown;
        if (isEvent(e)) {
          endMs = startMs + e[0] * 1000;
          break;
        }
      } catch {
        /* partial or not an event: look one line up */
      }
    }
    return { header, startMs, endMs, bytes: size };
  } finally {
    closeSync(fd);
  }
}

/**
 * The part of a cast between two wall times, as a new asciicast v2 text whose clock starts at
 * `fromMs` (its header `timestamp` is `fromMs` in whole seconds; times count from there). The header
 * size is the terminal's size at `fromMs` (the last resize before it). null when nothing of the
 * cast falls in the range.
 */
export function clipCast(cast: ParsedCast, fromMs: number, toMs: number): string | null {
  const base = cast.header.timestamp * 1000;
  let width = cast.header.width;
  let height = cast.header.height;
  const kept: CastEvent[] = [];
  const ts = Math.floor(fromMs / 1000);
  for (const [t, code, data] of cast.events) {
    const at = base + t * 1000;
    if (at < fromMs) {
      if (code === 'r') [width, height] = data.split('x').map(Number) as [number, number];
      continue;
    }
    if (at > toMs) break;
    kept.push([Number(((at - ts * 1000) / 1000).toFixed(6)), code, data]);
  }
  if (kept.length === 0 && (base > toMs || base + (cast.events.at(-1)?.[0] ?? 0) * 1000 < fromMs)) return null;
  const header: CastHeader = { ...cast.header, width, height, timestamp: ts };
  return [JSON.stringify(header), ...kept.map((e) => JSON.stringify(e))].join('\n') + '\n';
}

/**
 * What is wrong with a text as an asciicast v2 file, per the spec: a header object with integer
 * `version` 2, `width` and `height` (and, when present, an integer `timestamp`, a string `title`, an
 * `env` of strings), then event lines `[time, code, data]` with times that never decrease and the
 * codes the spec names (o, i, m, r — "WxH"). Empty: none.
 */
export function castProblems(text: string): string[] {
  const problems: string[] = [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
  } catch {
    return ['line 1: the header is not JSON'];
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) return ['line 1: the header is not an object'];
  if (header.version !== 2) problems.push('header: version is not 2');
  for (const k of ['width', 'height'] as const)
    if (!Number.isInteger(header[k]) || (header[k] as number) <= 0) problems.push(`header: ${k} is not a positive integer`);
  if (header.timestamp !== undefined && !Number.isInteger(header.timestamp)) problems.push('header: timestamp is not an integer');
  if (header.title !== undefined && typeof header.title !== 'string') problems.push('header: title is not a string');
  if (header.env !== undefined) {
    const env = header.env as Record<string, unknown>;
    if (typeof env !== 'object' || env === null || Object.values(env).some((v) => typeof v !== 'string'))
      problems.push('header: env is not an object of strings');
  }
  let last = 0;
  lines.slice(1).forEach((l, i) => {
    const n = i + 2;
    let e: unknown;
    try {
      e = JSON.parse(l);
    } catch {
      problems.push(`line ${n}: not JSON`);
      return;
    }
    if (!isEvent(e)) return problems.push(`line ${n}: not a [time, code, data] array`);
    const [t, code, data] = e;
    if (t < 0 || t < last) problems.push(`line ${n}: time ${t} goes back (previous ${last})`);
    last = Math.max(last, t);
    if (!['o', 'i', 'm', 'r'].includes(code)) problems.push(`line ${n}: unknown event code ${code}`);
    if (code === 'r' && !/^\d+x\d+$/.test(data)) problems.push(`line ${n}: resize data ${data} is not COLSxROWS`);
  });
  return problems;
}
