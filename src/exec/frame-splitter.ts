/**
 * Splits one output stream of the wrapper into the command's own bytes and the wrapper's frames
 * (see wrapper-script.ts). Frames start and end with a nonce the command cannot know, so nothing the
 * command prints can be mistaken for one. Works across arbitrary chunking; memory stays bounded because
 * payload bytes are handed on at once and only a possible partial frame is held back.
 */
export interface Frame {
  nonce: string;
  /** The fields between `N:` and `:N`, e.g. ['E', '0', 'ok', '/tmp'] (the last field may contain ':'). */
  fields: string[];
}

/** The largest frame we accept: a PATH_MAX path plus a little. Anything longer is a protocol error. */
const MAX_FRAME = 16 * 1024;

export class FrameSplitter {
  private pending: Buffer = Buffer.alloc(0);
  private nonces: Buffer[] = [];

  constructor(
    private readonly onPayload: (chunk: Buffer) => void,
    private readonly onFrame: (frame: Frame) => void,
    /** How many `:`-separated fields precede the free-text last field, per frame type. */
    private readonly fixedFields: Record<string, number> = { S: 3, E: 3, X: 0, H: 1 },
  ) {}

  /** Frames carrying any of these nonces are recognised; text with other nonces is payload. */
  expect(...nonces: string[]): void {
    this.nonces = nonces.map((n) => Buffer.from(n));
  }

  push(chunk: Buffer): void {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    this.drain();
  }

  /** The stream ended: whatever is left is payload (a frame cut short by a killed command). */
  end(): void {
    if (this.pending.length) this.onPayload(this.pending);
    this.pending = Buffer.alloc(0);
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
      // pending now starts with the nonce: look for ":<nonce>\n" that closes the frame.
      const closer = Buffer.concat([Buffer.from(':'), nonce, Buffer.from('\n')]);
      const end = this.pending.indexOf(closer, nonce.length);
      if (end < 0) {
        if (this.pending.length > MAX_FRAME) throw new Error('wrapper protocol error: frame too long');
        return;
      }
      const body = this.pending.subarray(nonce.length + 1, end).toString('utf8');
      this.pending = this.pending.subarray(end + closer.length);
      this.onFrame({ nonce: nonce.toString(), fields: this.splitFields(body) });
    }
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
