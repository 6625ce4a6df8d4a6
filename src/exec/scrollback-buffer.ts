/**
 * A terminal's recent output, kept in the core so a viewer that (re)attaches sees what the shell
 * printed while nobody watched: a byte ring of at most `limit` bytes, oldest dropped first.
 *
 * Why raw bytes and not a serialized screen (@xterm/addon-serialize over @xterm/headless): no terminal
 * emulator has to parse every byte of every shell in the core, and the viewer's xterm.js replays the
 * exact stream (colours, cursor moves, alternate screen) itself. The cost: the replay is the stream's
 * tail, not a screen state — so when the oldest bytes are dropped, the cut moves to just after the next
 * line break, and the replay never starts in the middle of an escape sequence or a UTF-8 character.
 */
/** How far past a cut a line break is looked for. */
const LINE_SEARCH = 4096;

export class ScrollbackBuffer {
  private chunks: Buffer[] = [];
  private bytes = 0;

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`scrollback limit must be a positive integer, not ${limit}`);
  }

  /** Bytes held now (never more than `limit`). */
  get size(): number {
    return this.bytes;
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    if (this.bytes > this.limit) this.trim();
  }

  /** Everything held, oldest first (a copy: later pushes do not change it). */
  snapshot(): Buffer {
    if (this.chunks.length !== 1) {
      this.chunks = [Buffer.concat(this.chunks, this.bytes)];
    }
    return Buffer.from(this.chunks[0] ?? Buffer.alloc(0));
  }

  clear(): void {
    this.chunks = [];
    this.bytes = 0;
  }

  private trim(): void {
    this.drop(this.bytes - this.limit);
    // Start the kept tail on a line of its own (a cut mid-line may be mid-sequence); only the first
    // few KiB are searched, so a flood without line breaks costs no more than a plain cut.
    let scanned = 0;
    for (const chunk of this.chunks) {
      const nl = chunk.subarray(0, LINE_SEARCH - scanned).indexOf(0x0a);
      if (nl >= 0) return this.drop(scanned + nl + 1);
      scanned += chunk.length;
      if (scanned >= LINE_SEARCH) return;
    }
  }

  /** Drops the oldest `n` bytes. */
  private drop(n: number): void {
    while (n > 0 && this.chunks.length) {
      const head = this.chunks[0]!;
      if (head.length <= n) {
        this.chunks.shift();
        this.bytes -= head.length;
        n -= head.length;
      } else {
        this.chunks[0] = head.subarray(n);
        this.bytes -= n;
        n = 0;
      }
    }
  }
}
