import { StringDecoder } from 'node:string_decoder';

/**
 * Docker's multiplexed log stream (a container without a TTY): frames of an 8-byte header — stream
 * (1 stdout, 2 stderr), three zero bytes, a big-endian uint32 length — then the payload. dockerode's
 * `demuxStream` needs two writable streams; this is the same split, incremental, as text.
 */
export class LogFrameDecoder {
  private pending: Buffer = Buffer.alloc(0);
  private readonly out = new StringDecoder('utf8');
  private readonly err = new StringDecoder('utf8');

  /** Feeds bytes; returns the text of every whole frame so far (stdout and stderr interleaved as written). */
  push(chunk: Buffer): string {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    let text = '';
    let at = 0;
    while (this.pending.length - at >= 8) {
      const stream = this.pending[at]!;
      const size = this.pending.readUInt32BE(at + 4);
      if (this.pending.length - at - 8 < size) break;
      const payload = this.pending.subarray(at + 8, at + 8 + size);
      text += (stream === 2 ? this.err : this.out).write(payload);
      at += 8 + size;
    }
    this.pending = this.pending.subarray(at);
    return text;
  }
}

/** The text of a complete multiplexed buffer (what `logs` without follow returns). */
export function decodeLogFrames(buf: Buffer): string {
  return new LogFrameDecoder().push(buf);
}
