import type { CoreEvent, EventFrame } from '../../../src/api/contract.js';

/**
 * A stand-in for the browser's WebSocket on `/ws/events`: the test plays the server (hello, events,
 * a cut). Every socket the client opens is kept in `FakeEventSocket.opened`.
 */
export class FakeEventSocket {
  static opened: FakeEventSocket[] = [];
  onmessage: ((m: MessageEvent) => void) | null = null;
  onclose: (() => void) | null = null;
  onerror: (() => void) | null = null;
  closed = false;

  constructor(readonly url: string) {
    FakeEventSocket.opened.push(this);
  }

  static reset(): void {
    FakeEventSocket.opened = [];
  }

  static last(): FakeEventSocket {
    const s = FakeEventSocket.opened.at(-1);
    if (!s) throw new Error('no event socket was opened');
    return s;
  }

  frame(f: EventFrame): void {
    this.onmessage?.({ data: JSON.stringify(f) } as MessageEvent);
  }

  hello(epoch = 'e1', seq = 0, resync = false): void {
    this.frame({ type: 'hello', epoch, seq, resync });
  }

  event(e: CoreEvent extends infer E ? (E extends CoreEvent ? Omit<E, 'at'> & { at?: string } : never) : never): void {
    this.frame({ type: 'event', event: { at: '2026-01-01T00:00:00.000Z', ...e } });
  }

  /** The server (or the network) drops the stream. */
  cut(): void {
    if (this.closed) return;
    this.closed = true;
    this.onclose?.();
  }

  close(): void {
    this.cut();
  }
}
