/**
 * Splits one output stream of the wrapper into the command's own bytes and the wrapper's frames
 * (see wrapper-script.ts). Frames start and end with a nonce the command cannot know, so nothing the
 * command prints can be mistaken for one. Works across arbitrary chunking; memory stays bounded because
 * payload bytes are handed on at once and only a possible partial frame is held back.
 *
 * It never throws: it runs inside a stream's data handler, where an exception would take the host
 * process down, and its input is whatever the sandbox printed. Anything carrying an expected nonce that
 * is not a well-formed one-line frame (too long, cut by a newline, cut by the end of the stream) is
 * handed on as payload and reported through `onBroken`, so the caller can stop trusting the framing.
 */
export interface Frame {
  nonce: string;
  /**
   * The fields between `N:` and `:N`, e.g. ['E', '0', 'ok', '/tmp'] (the last field may contain ':'),
   * one character per byte (latin1): a directory field is read with decodeFramePath.
   */
  fields: string[];
}

/** A directory field of a frame as the wrapper wrote it (percent-encoded `%`, LF, CR) → its exact bytes. */
export function frameFieldBytes(field: string): Buffer {
  const raw = Buffer.from(field, 'latin1');
  const out = Buffer.alloc(raw.length);
  let n = 0;
  for (let i = 0; i < raw.length; i++) {
    const hex = raw[i] === 0x25 && i + 2 < raw.length ? raw.subarray(i + 1, i + 3).toString('latin1') : '';
    if (/^[0-9A-Fa-f]{2}$/.test(hex)) {
      out[n++] = parseInt(hex, 16);
      i += 2;
    } else out[n++] = raw[i]!;
  }
  return out.subarray(0, n);
}

/**
 * A directory field as text: its bytes when they are UTF-8, else null (a name that is not UTF-8 cannot
 * be carried as a JSON string without changing it, so it is not reported as observed).
 */
export function decodeFramePath(field: string): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(frameFieldBytes(field));
  } catch {
    return null;
  }
}

/**
 * The longest frame line we wait for. A cwd can be longer than PATH_MAX (a deep tree entered one
 * component at a time), so this is generous; past it, the bytes are payload and the framing is broken.
 */
export const MAX_FRAME = 64 * 1024;

export class FrameSplitter {
  private pending: Buffer = Buffer.alloc(0);
  private nonces: Buffer[] = [];

  constructor(
    private readonly onPayload: (chunk: Buffer) => void,
    private readonly onFrame: (frame: Frame) => void,
    /** Bytes carrying an expected nonce that were not a frame; they went to onPayload. */
    private readonly onBroken: (why: string) => void = () => undefined,
    /** How many `:`-separated fields precede the free-text last field, per frame type. */
    private readonly fixedFields: Record<string, number> = { S: 3, E: 3, X: 0, H: 1 },
  ) {}

  /** Frames carrying any of these nonces are recognised; text with other nonces is payload. */
  expect(...nonces: string[]): void {
    this.nonces = nonces.filter((n) => n.length > 0).map((n) => Buffer.from(n));
  }

  push(chunk: Buffer): void {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    this.drain();
  }

  /** The stream ended: whatever is left is payload (a frame cut short by a killed command). */
  end(): void {
    const rest = this.pending;
    this.pending = Buffer.alloc(0);
    if (!rest.length) return;
    this.onPayload(rest);
    if (this.findNonce(rest, 0)) this.onBroken('the stream ended inside a frame');
  }

  private drain(): void {
    for (;;) {
      const hit = this.findNonce(this.pending, 0);
      if (!hit) {
        // Hold back what could be the start of a nonce split across chunks.
        const keep = Math.max(0, ...this.nonces.map((n) => n.length - 1));
        const cut = Math.max(0, this.pending.length - keep);
        if (cut > 0) {
          this.onPayload(this.pending.subarray(0, cut));
          this.pending = this.pending.subarray(cut);
        }
        return;
      }
      const { index, nonce } = hit;
      if (index > 0) {
        this.onPayload(this.pending.subarray(0, index));
        this.pending = this.pending.subarray(index);
      }
      // pending starts with the nonce. A frame is one line: `N:<body>:N\n`.
      const eol = this.pending.indexOf(0x0a, nonce.length);
      if (eol < 0) {
        if (this.pending.length <= MAX_FRAME) return;
        this.reject(this.pending.length, `a frame-shaped line longer than ${MAX_FRAME} bytes`);
        continue;
      }
      const line = this.pending.subarray(0, eol);
      const minimal = 2 * nonce.length + 2;
      if (
        line.length < minimal ||
        line[nonce.length] !== 0x3a ||
        !line.subarray(line.length - nonce.length - 1).equals(Buffer.concat([Buffer.from(':'), nonce]))
      ) {
        this.reject(eol + 1, 'a line carrying the nonce that is not a frame');
        continue;
      }
      // latin1: one character per byte, so a path field keeps its exact bytes (decodeFramePath).
      const body = line.subarray(nonce.length + 1, line.length - nonce.length - 1).toString('latin1');
      this.pending = this.pending.subarray(eol + 1);
      this.onFrame({ nonce: nonce.toString(), fields: this.splitFields(body) });
    }
  }

  /** Hands the first `length` bytes on as payload and reports the broken framing. */
  private reject(length: number, why: string): void {
    const bytes = this.pending.subarray(0, length);
    this.pending = this.pending.subarray(length);
    this.onPayload(bytes);
    this.onBroken(why);
  }

  private splitFields(body: string): string[] {
    const type = body.slice(0, body.indexOf(':') < 0 ? body.length : body.indexOf(':'));
    const fixed = this.fixedFields[type] ?? 0;
    const fields: string[] = [];
    let rest = body;
    for (let i = 0; i < fixed; i++) {
      const at = rest.indexOf(':');
      if (at < 0) break;
      fields.push(rest.slice(0, at));
      rest = rest.slice(at + 1);
    }
    fields.push(rest);
    return fields;
  }

  private findNonce(buf: Buffer, from: number): { index: number; nonce: Buffer } | null {
    let best: { index: number; nonce: Buffer } | null = null;
    for (const n of this.nonces) {
      const i = buf.indexOf(n, from);
      if (i >= 0 && (!best || i < best.index)) best = { index: i, nonce: n };
    }
    return best;
  }
}
