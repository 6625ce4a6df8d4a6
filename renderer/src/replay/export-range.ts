import { parseTimeArg } from '../../../src/shared/time-arg.js';
import type { Span } from './timeline.js';
import { formatOffset } from './timeline.js';

/**
 * The export form's from/to: what the CLI's --from/--to take (ISO 8601, or a duration ago: 10m),
 * and a position in the recording as the scrubber shows it (1:30, 1:30.5, 1:02:03). Checked here as
 * they are typed, so a bad range says what is wrong before anything is sent; the core checks again.
 */

const POSITION = /^(?:(\d+):)?(\d+):(\d{1,2}(?:\.\d+)?)$/;

/** A field's time (epoch ms); undefined when empty; throws (invalid_input, with the forms it takes) when it is none. */
export function parseExportTime(value: string, what: string, span: Span, now = Date.now()): number | undefined {
  const v = value.trim();
  if (!v) return undefined;
  const p = POSITION.exec(v);
  if (p) {
    const [h, m, s] = [Number(p[1] ?? 0), Number(p[2]), Number(p[3])];
    return span.startMs + Math.round(((h * 60 + m) * 60 + s) * 1000);
  }
  return Date.parse(parseTimeArg(v, what, now));
}

export interface RangeProblem {
  message: string;
  hint: string;
}

/** What is wrong with from/to (either may be left out: the recording's start/end), or null. */
export function exportRangeProblem(fromText: string, toText: string, span: Span, now = Date.now()): RangeProblem | null {
  const spanText = `0:00.0 – ${formatOffset(span.endMs - span.startMs)}`;
  let from: number | undefined;
  let to: number | undefined;
  try {
    from = parseExportTime(fromText, 'From', span, now);
    to = parseExportTime(toText, 'To', span, now);
  } catch (err) {
    const e = err as { message: string; hint?: string };
    return {
      message: `${e.message}.`,
      hint: `Give a position in the recording (1:30), ${e.hint?.replace(/^give /, '') ?? 'or an ISO time'}.`,
    };
  }
  if (from === undefined && to === undefined) return null;
  const f = from ?? span.startMs;
  const t = to ?? span.endMs;
  const where = `the recording spans ${spanText}`;
  if (t < span.startMs || f > span.endMs)
    return {
      message: 'The range is outside the recording.',
      hint: `Give times inside it (${where}), or leave From and To empty for all of it.`,
    };
  if (f > t) return { message: 'From is after To.', hint: `Give a From before the To (${where}).` };
  if (f === t) return { message: 'The range is empty: From and To are the same time.', hint: `Give a To after the From (${where}).` };
  return null;
}
