import type { ExecResult, ExecWarning, OutputCut } from '../shared/exec-result.js';
import { streamText } from './stream-text.js';

/**
 * The largest answer any transport sends for one call: MCP over stdio (the SDK's client drops the
 * connection above 10 MiB), MCP over HTTP and the JSON API alike.
 */
export const ANSWER_MAX_BYTES = 8 * 1024 * 1024;
/** Headroom for what wraps a result on the wire (JSON-RPC or the API's envelope, ids, names). */
export const ANSWER_ENVELOPE_BYTES = 64 * 1024;

/** The exact bytes of a result's two streams (ExecOutcome's stdoutBytes / stderrBytes). */
export interface StreamBytes {
  stdout: Buffer;
  stderr: Buffer;
}

type Stream = 'stdout' | 'stderr';
type Fittable = Pick<ExecResult, 'stdout' | 'stderr' | 'encoding' | 'truncated' | 'warnings' | 'stdoutTruncated' | 'stderrTruncated'>;

/** The result with `stream` cut to its first `keep` bytes, saying what was cut. */
function cutTo<T extends Fittable>(r: T, bytes: StreamBytes, stream: Stream, keep: number): T {
  const all = bytes[stream];
  const wasCut = r[`${stream}Truncated`];
  const totalBytes = wasCut?.totalBytes ?? all.length;
  if (keep >= all.length && !wasCut) return r;
  const kept = all.subarray(0, Math.min(keep, all.length));
  const text = streamText(kept, true);
  // A cut inside a character leaves that character out: count only what the text carries.
  const keptBytes = text.encoding === 'utf8' ? Buffer.byteLength(text.text) : kept.length;
  const cut: OutputCut = { keptBytes, totalBytes };
  return {
    ...r,
    [stream]: text.text,
    encoding: { ...r.encoding, [stream]: text.encoding },
    truncated: { ...r.truncated, [stream]: keptBytes < totalBytes },
    [`${stream}Truncated`]: keptBytes < totalBytes ? cut : undefined,
  };
}

/** The one `output_truncated` warning, naming what each stream kept of what it printed. */
function withCutWarning<T extends Fittable>(r: T, why: string): T {
  const parts = (['stdout', 'stderr'] as const)
    .filter((s) => r[`${s}Truncated`])
    .map((s) => `${s} kept ${r[`${s}Truncated`]!.keptBytes} of ${r[`${s}Truncated`]!.totalBytes} bytes`);
  if (!parts.length) return r;
  const warning: ExecWarning = { code: 'output_truncated', message: `output was cut (${why}): ${parts.join(', ')}` };
  return { ...r, warnings: [...r.warnings.filter((w) => w.code !== 'output_truncated'), warning] };
}

/**
 * What one byte of UTF-8 text costs in the answer, with the text carried `copies` times: once as a JSON
 * string (`"`, `\\` and the short escapes take 2 bytes, other control bytes 6: `\\u0000`), and for
 * MCP once more inside the JSON text of the text part (escaped again: 4, 3 and 7 bytes).
 */
function byteCost(b: number, copies: 1 | 2): number {
  if (b === 0x22 || b === 0x5c) return copies === 1 ? 2 : 6;
  if (b >= 0x20) return copies;
  const short = b === 0x08 || b === 0x09 || b === 0x0a || b === 0x0c || b === 0x0d;
  return copies === 1 ? (short ? 2 : 6) : short ? 5 : 13;
}

/** The longest prefix of `bytes` whose text (as streamText carries it) costs at most `budget`. */
function longestPrefix(bytes: Buffer, budget: number, copies: 1 | 2): number {
  if (budget <= 0) return 0;
  // As base64: 4 characters per 3 bytes, no escapes, in each copy.
  const asBase64 = Math.min(bytes.length, Math.floor(budget / (4 * copies)) * 3);
  // As text: one pass, exact.
  let asText = 0;
  for (let sum = 0; asText < bytes.length; asText++) {
    sum += byteCost(bytes[asText]!, copies);
    if (sum > budget) break;
  }
  const isText = (k: number): boolean => streamText(bytes.subarray(0, k), true).encoding === 'utf8';
  // The cut decides the encoding: a prefix before the first invalid byte is text, and costs as text.
  if (!isText(asBase64)) return asBase64;
  if (asText <= asBase64 || isText(asText)) return asText;
  return asBase64;
}

/**
 * Cuts a command's output so that its whole answer, as `size` measures it on the transport that sends
 * it, is at most `maxBytes`, keeping the exit code, cwd and every other field, and saying what was cut
 * (`stdoutTruncated` / `stderrTruncated` and an `output_truncated` warning). `copies`: how many times
 * the answer carries the output (MCP: 2, the text and structuredContent). Without a cut it returns the
 * result as it is.
 */
export function fitAnswer<T extends Fittable>(
  result: T,
  bytes: StreamBytes,
  opts: { maxBytes: number; copies: 1 | 2; size: (r: T) => number },
): T {
  const why = `the answer is limited to ${opts.maxBytes} bytes`;
  const costOf = (stream: Stream): number => {
    if (result.encoding[stream] === 'base64') return Math.ceil(bytes[stream].length / 3) * 4 * opts.copies;
    const b = bytes[stream];
    let sum = 0;
    for (let i = 0; i < b.length; i++) sum += byteCost(b[i]!, opts.copies);
    return sum;
  };
  const none = withCutWarning(cutTo(cutTo(result, bytes, 'stdout', 0), bytes, 'stderr', 0), why);
  // The fixed part is measured on the real transport's form; the streams' share is computed exactly.
  const room = Math.max(0, opts.maxBytes - opts.size(none));
  const full = { stdout: costOf('stdout'), stderr: costOf('stderr') };
  if (full.stdout + full.stderr <= room && opts.size(result) <= opts.maxBytes) return result;
  // Each stream gets half the room; one that needs less leaves the rest to the other.
  const stderrShare = full.stdout <= room / 2 ? room - full.stdout : Math.max(room / 2, room - full.stdout);
  const stderrKeep = longestPrefix(bytes.stderr, Math.min(full.stderr, stderrShare), opts.copies);
  const stderrUsed = Math.min(full.stderr, stderrShare);
  let keep = { stdout: longestPrefix(bytes.stdout, room - stderrUsed, opts.copies), stderr: stderrKeep };
  for (;;) {
    const fitted = withCutWarning(cutTo(cutTo(result, bytes, 'stdout', keep.stdout), bytes, 'stderr', keep.stderr), why);
    if (opts.size(fitted) <= opts.maxBytes || (keep.stdout === 0 && keep.stderr === 0)) return fitted;
    // Only the warning's digits can differ from the measured fixed part: a little less, once or twice.
    keep = { stdout: Math.floor(keep.stdout * 0.99), stderr: Math.floor(keep.stderr * 0.99) };
  }
}
