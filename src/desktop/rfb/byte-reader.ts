/**
 * The incoming side of an RFB connection: a queue of received chunks read from the front (noVNC's
 * `rQ` in `core/websock.js`, without its one big ring buffer). A parser asks `has(n)` first and reads
 * only when the bytes are there, so a message split across any chunk boundaries parses the same as one
 * chunk. Reads never copy the whole queue: a value that lies inside one chunk is read in place, and only
 * a value that straddles chunks is assembled, from just its own bytes.
 */
export class ByteReader {
  private chunks: Buffer[] = [];
  /** Offset of the first unread byte in chunks[0]. */
  private head = 0;
  private length = 0;
  private consumedBytes = 0;
  /** While set, every byte consumed is appended here as views of the received chunks (startCapture). */
  private captured: Buffer[] | undefined;

  /** Unread bytes queued. */
  get available(): number {
    return this.length;
  }

  /** Bytes read or skipped since the reader was made (the client's traffic statistics count these). */
  get consumed(): number {
    return this.consumedBytes;
  }

  /**
   * From now on, keep what is consumed (views, no copy) until takeCapture/stopCapture: how the client
   * hands a recorder the wire bytes of one whole message without parsing them twice.
   */
  startCapture(): void {
    this.captured = [];
  }

  /** The bytes consumed since startCapture, and capturing stops. */
  takeCapture(): Buffer[] {
    const out = this.captured ?? [];
    this.captured = undefined;
    return out;
  }

  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length));
    this.length += chunk.length;
  }

  /** Drops everything queued (the connection is over). */
  clear(): void {
    this.chunks = [];
    this.head = 0;
    this.length = 0;
  }

  has(n: number): boolean {
    return this.length >= n;
  }

  peekU8(offset = 0): number {
    this.need(offset + 1, 'peekU8');
    return this.byteAt(offset);
  }

  peekU16(offset = 0): number {
    return this.view(offset, 2, 'peekU16').readUInt16BE(0);
  }

  peekU32(offset = 0): number {
    return this.view(offset, 4, 'peekU32').readUInt32BE(0);
  }

  peekS32(offset = 0): number {
    return this.view(offset, 4, 'peekS32').readInt32BE(0);
  }

  /** n bytes starting `offset` bytes in, without consuming them (a view when they lie in one chunk). */
  peek(n: number, offset = 0): Buffer {
    return this.view(offset, n, 'peek');
  }

  readU8(): number {
    const v = this.peekU8();
    this.skip(1);
    return v;
  }

  readU16(): number {
    const v = this.peekU16();
    this.skip(2);
    return v;
  }

  readU32(): number {
    const v = this.peekU32();
    this.skip(4);
    return v;
  }

  readS32(): number {
    const v = this.peekS32();
    this.skip(4);
    return v;
  }

  /**
   * Removes and returns n bytes. Inside one chunk the result is a view of it (valid as long as the caller
   * does not expect the sender to leave that memory alone); across chunks, a copy of just those n bytes.
   */
  readBytes(n: number): Buffer {
    const out = this.view(0, n, 'readBytes');
    this.skip(n);
    return out;
  }

  /** Removes n bytes, which must be queued. */
  skip(n: number): void {
    this.need(n, 'skip');
    this.drop(n);
  }

  /** Removes up to n bytes, as many as are queued; returns how many (for discarding a long payload as it arrives). */
  discard(n: number): number {
    const k = Math.min(n, this.length);
    this.drop(k);
    return k;
  }

  /** A caller that reads without asking `has` first has a bug; say which read and by how much. */
  private need(n: number, what: string): void {
    if (this.length < n) throw new RangeError(`ByteReader.${what} needs ${n} bytes but only ${this.length} are queued`);
  }

  private byteAt(offset: number): number {
    let at = this.head + offset;
    for (const c of this.chunks) {
      if (at < c.length) return c[at]!;
      at -= c.length;
    }
    throw new RangeError(`ByteReader: offset ${offset} is past the ${this.length} queued bytes`);
  }

  private view(offset: number, n: number, what: string): Buffer {
    this.need(offset + n, what);
    if (n === 0) return Buffer.alloc(0);
    // Find the chunk holding `offset`.
    let i = 0;
    let at = this.head + offset;
    while (at >= this.chunks[i]!.length) {
      at -= this.chunks[i]!.length;
      i++;
    }
    const first = this.chunks[i]!;
    if (at + n <= first.length) return first.subarray(at, at + n);
    const out = Buffer.allocUnsafe(n);
    for (let filled = 0; filled < n; i++, at = 0) {
      const c = this.chunks[i]!;
      const k = Math.min(n - filled, c.length - at);
      c.copy(out, filled, at, at + k);
      filled += k;
    }
    return out;
  }

  /**
   * Appends first[from, from+k) to the capture, extending the last view when it ends right there: a
   * decoder that reads tile by tile (Hextile) would otherwise leave thousands of views per update.
   */
  private capture(chunk: Buffer, from: number, k: number): void {
    const c = this.captured!;
    const last = c[c.length - 1];
    if (last && last.buffer === chunk.buffer && last.byteOffset + last.length === chunk.byteOffset + from) {
      // Same memory, contiguous: one view over both (even across two chunks that share a slab).
      c[c.length - 1] = Buffer.from(last.buffer, last.byteOffset, last.length + k);
      return;
    }
    c.push(chunk.subarray(from, from + k));
  }

  private drop(n: number): void {
    this.length -= n;
    this.consumedBytes += n;
    while (n > 0) {
      const first = this.chunks[0]!;
      const k = Math.min(n, first.length - this.head);
      if (this.captured && k > 0) this.capture(first, this.head, k);
      this.head += k;
      n -= k;
      if (this.head === first.length) {
        this.chunks.shift();
        this.head = 0;
      }
    }
  }
}
