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
    const used = walkFrames(this.pending, (stream, payload) => (text += (stream === 2 ? this.err : this.out).write(payload)));
    this.pending = this.pending.subarray(used);
    return text;
  }
}

/** Calls `onFrame` for each whole frame from the buffer's start; returns how many bytes those frames took. */
function walkFrames(buf: Buffer, onFrame: (stream: number, payload: Buffer) => void): number {
  let at = 0;
  while (buf.length - at >= 8) {
    const size = buf.readUInt32BE(at + 4);
    if (buf.length - at - 8 < size) break;
    onFrame(buf[at]!, buf.subarray(at + 8, at + 8 + size));
    at += 8 + size;
  }
  return at;
}

/** The text of a complete multiplexed buffer (what `logs` without follow returns). */
export function decodeLogFrames(buf: Buffer): string {
  return new LogFrameDecoder().push(buf);
}

/** stdout and stderr of a complete multiplexed buffer, apart (what a finished exec's stream carries). */
export function splitLogFrames(buf: Buffer): { stdout: string; stderr: string } {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  walkFrames(buf, (stream, payload) => (stream === 2 ? err : out).push(payload));
  return { stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') };
}
