/** Keeps the first `limit` bytes of a stream and notes whether more arrived; memory stays bounded. */
export class BoundedBuffer {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  truncated = false;
  /** Every byte pushed, kept or not: what a cut result reports as the stream's whole size. */
  total = 0;

  constructor(private readonly limit: number) {}

  push(chunk: Buffer): void {
    this.total += chunk.length;
    const room = this.limit - this.size;
    if (room <= 0) {
      if (chunk.length) this.truncated = true;
      return;
    }
    // Copy: the caller's chunk may be a view into a buffer it reuses.
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    if (part.length < chunk.length) this.truncated = true;
    this.chunks.push(Buffer.from(part));
    this.size += part.length;
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks, this.size);
  }
}
