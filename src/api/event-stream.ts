import type { WebSocket } from 'ws';
import type { CoreEvent, CoreEventBus } from '../shared/core-events.js';
import { CLOSE } from '../shared/stream-close-codes.js';
import type { EventFrame } from './contract.js';

/** A client this far behind is cut (it reconnects with `since` and catches up from the backlog). */
const MAX_BUFFERED = 2 * 1024 * 1024;
/** A ping keeps idle proxies quiet and finds a dead peer (no pong by the next ping: terminated). */
const PING_MS = 20_000;

/**
 * One `/ws/events` client: `hello`, then the backlog after `since` (same epoch only), then live
 * events. While it is open the bus counts it as a listener, which starts the costly feeds.
 */
export function pipeEvents(ws: WebSocket, bus: CoreEventBus, q: { since: string | null; epoch: string | null }): void {
  const listening = bus.listen();
  const send = (f: EventFrame): void => {
    if (ws.readyState !== ws.OPEN) return;
    if (ws.bufferedAmount > MAX_BUFFERED) return ws.close(CLOSE.tooSlow, 'reading too slowly: reconnect with since');
    ws.send(JSON.stringify(f));
  };
  // Subscribed before the backlog is read, so nothing published in between is lost (dedup by seq).
  let sentUpTo = 0;
  const queue: CoreEvent[] = [];
  let replaying = true;
  const sub = bus.onEvent((event) => {
    if (replaying) queue.push(event);
    else if (event.seq > sentUpTo) {
      sentUpTo = event.seq;
      send({ type: 'event', event });
    }
  });
  const since = q.since !== null && /^\d+$/.test(q.since) ? Number(q.since) : null;
  const backlog = since !== null && q.epoch === bus.epoch ? bus.since(since) : null;
  send({ type: 'hello', epoch: bus.epoch, seq: bus.lastSeq, resync: backlog === null });
  sentUpTo = backlog === null ? bus.lastSeq : since!;
  for (const event of [...(backlog ?? []), ...queue]) {
    if (event.seq <= sentUpTo) continue;
    sentUpTo = event.seq;
    send({ type: 'event', event });
  }
  replaying = false;

  let alive = true;
  ws.on('pong', () => (alive = true));
  const ping = setInterval(() => {
    if (!alive) return ws.terminate();
    alive = false;
    ws.ping();
  }, PING_MS);
  ping.unref();
  ws.on('message', () => undefined); // nothing to read: the stream is one-way
  ws.on('close', () => {
    clearInterval(ping);
    sub.dispose();
    listening.dispose();
  });
}
