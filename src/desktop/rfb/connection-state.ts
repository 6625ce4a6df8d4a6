import { Emitter, type Event, type IDisposable } from '../../shared/lifecycle.js';

/**
 * The states of an RFB client connection, in the order the handshake walks them (RFC 6143 §7.1–7.3).
 * "disconnected" is final: a client that has left it is never reused.
 */
export type RfbState = 'protocol-version' | 'security' | 'security-result' | 'server-init' | 'connected' | 'disconnected';

/** Where each state may go. 3.3 and 3.7 have no SecurityResult for None, so security may skip it. */
const TRANSITIONS: Readonly<Record<RfbState, readonly RfbState[]>> = {
  'protocol-version': ['security', 'disconnected'],
  security: ['security-result', 'server-init', 'disconnected'],
  'security-result': ['server-init', 'disconnected'],
  'server-init': ['connected', 'disconnected'],
  connected: ['disconnected'],
  disconnected: [],
};

export interface RfbStateChange {
  from: RfbState;
  to: RfbState;
}

/** A transition the table does not allow: a bug in the client, never a server's doing. */
export class RfbStateError extends Error {
  constructor(
    readonly from: RfbState,
    readonly to: RfbState,
  ) {
    super(`invalid RFB state transition ${from} → ${to}`);
    this.name = 'RfbStateError';
  }
}

/** The client's current state, moved only along TRANSITIONS; every move is announced on `onDidChange`. */
export class RfbConnectionState implements IDisposable {
  private current: RfbState = 'protocol-version';
  private readonly changed = new Emitter<RfbStateChange>();
  readonly onDidChange: Event<RfbStateChange> = this.changed.event;

  get state(): RfbState {
    return this.current;
  }

  get isFinal(): boolean {
    return this.current === 'disconnected';
  }

  canMoveTo(next: RfbState): boolean {
    return TRANSITIONS[this.current].includes(next);
  }

  /** Moves to `next`; throws RfbStateError if the table does not allow it (including any move out of "disconnected"). */
  moveTo(next: RfbState): void {
    if (!this.canMoveTo(next)) throw new RfbStateError(this.current, next);
    const from = this.current;
    this.current = next;
    this.changed.fire({ from, to: next });
  }

  dispose(): void {
    this.changed.dispose();
  }
}
