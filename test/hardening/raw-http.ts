import { connect } from 'node:net';

export interface RawAnswer {
  /** The status code of the first status line, or null when none came. */
  status: number | null;
  /** What came back, at most the first 4 KiB. */
  head: string;
  /** 'answered', 'closed' (the server closed without a status line) or 'timeout'. */
  outcome: 'answered' | 'closed' | 'timeout';
}

/** Sends raw bytes on a fresh TCP connection and reads until a status line, a close or the timeout. */
export function rawRequest(port: number, bytes: Buffer | string, timeoutMs = 5_000): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let got = Buffer.alloc(0);
    let done = false;
    const finish = (outcome: RawAnswer['outcome']) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const head = got.subarray(0, 4096).toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3}) /.exec(head);
      resolve({ status: m ? Number(m[1]) : null, head, outcome: m ? 'answered' : outcome });
    };
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    socket.on('data', (c: Buffer) => {
      got = Buffer.concat([got, c]);
      if (/^HTTP\/1\.[01] \d{3} [^\r\n]*\r\n/.test(got.subarray(0, 256).toString('latin1'))) finish('answered');
    });
    socket.on('error', () => finish('closed'));
    socket.on('close', () => finish('closed'));
    socket.write(bytes);
  });
}
