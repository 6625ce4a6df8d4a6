import type { WebSocket } from 'ws';
import { asSandboxDeskError } from '../shared/errors.js';
import { CLOSE } from '../shared/stream-close-codes.js';
import type { LogService } from './log-service.js';

export interface LogGrant {
  sandbox: string;
  source: string;
  tail: number;
}

/** Above this many bytes queued for a slow viewer, new text is dropped (and counted) until it drains. */
const HIGH_WATER = 2 * 1024 * 1024;

/**
 * One follower of a log over a WebSocket: text frames, the last lines first. A log that outruns its
 * viewer loses text rather than growing memory without bound; the viewer is told how much, in line.
 * The source ending (a container removed) closes the stream with 1000 and why.
 */
export async function pipeLog(ws: WebSocket, logs: LogService, grant: LogGrant): Promise<() => void> {
  let dropped = 0;
  let stopped = false;
  const send = (text: string): void => {
    if (ws.readyState !== ws.OPEN) return;
    if (ws.bufferedAmount > HIGH_WATER) {
      dropped += Buffer.byteLength(text);
      return;
    }
    if (dropped > 0) {
      ws.send(`\n[… ${dropped} bytes of log dropped: the viewer fell behind …]\n`);
      dropped = 0;
    }
    ws.send(text);
  };
  let sub: { dispose(): void } | null = null;
  try {
    sub = await logs.follow(grant.sandbox, grant.source, grant.tail, {
      onData: send,
      onEnd: (err) => {
        if (ws.readyState === ws.OPEN)
          ws.close(err ? CLOSE.streamGone : 1000, (err ? `log ended: ${err.message}` : 'log ended').slice(0, 120));
      },
    });
  } catch (err) {
    if (ws.readyState === ws.OPEN) ws.close(CLOSE.streamGone, asSandboxDeskError(err).message.slice(0, 120));
    return () => undefined;
  }
  if (stopped || ws.readyState !== ws.OPEN) sub.dispose();
  return () => {
    stopped = true;
    sub?.dispose();
  };
}
