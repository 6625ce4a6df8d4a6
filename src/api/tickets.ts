import { randomBytes } from 'node:crypto';

/** WebSocket close codes for refused streams; distinct, so a client (and a test) can tell why. */
export const CLOSE = {
  /** No ticket, or one this server never issued. */
  ticketUnknown: 4401,
  /** The Origin is not this app's. */
  originRefused: 4403,
  /** The ticket was already used: tickets are single-use. */
  ticketUsed: 4409,
  /** The ticket expired before it was used. */
  ticketExpired: 4410,
  /** The screen went away (desktop stopped, sandbox stopped). */
  streamGone: 4001,
  /** The viewer broke the protocol. */
  protocolError: 1003,
} as const;

export type Redeemed<G> = { ok: true; grant: G } | { ok: false; code: number; reason: string };

/**
 * Single-use, short-lived tickets for opening a stream. A ticket is 128 random bits; redeeming it
 * once consumes it. Used and expired tickets are remembered a little longer so the refusal can say
 * which it was.
 */
export class TicketBook<G> {
  private readonly live = new Map<string, { grant: G; expires: number }>();
  private readonly spent = new Map<string, number>();

  constructor(private readonly ttlMs = 30_000, private readonly now: () => number = Date.now) {}

  issue(grant: G): string {
    this.sweep();
    const ticket = randomBytes(16).toString('hex');
    this.live.set(ticket, { grant, expires: this.now() + this.ttlMs });
    return ticket;
  }

  redeem(ticket: string | null | undefined): Redeemed<G> {
    this.sweep();
    if (!ticket) return { ok: false, code: CLOSE.ticketUnknown, reason: 'ticket missing' };
    if (this.spent.has(ticket)) return { ok: false, code: CLOSE.ticketUsed, reason: 'ticket already used' };
    const entry = this.live.get(ticket);
    if (!entry) return { ok: false, code: CLOSE.ticketUnknown, reason: 'ticket unknown' };
    this.live.delete(ticket);
    this.spent.set(ticket, this.now() + this.ttlMs);
    if (entry.expires < this.now()) return { ok: false, code: CLOSE.ticketExpired, reason: 'ticket expired' };
    return { ok: true, grant: entry.grant };
  }

  private sweep(): void {
    const now = this.now();
    // Expired tickets move to `spent` so a late use reads "expired", then both are forgotten.
    for (const [t, e] of this.live) if (e.expires + this.ttlMs < now) this.live.delete(t);
    for (const [t, until] of this.spent) if (until + this.ttlMs < now) this.spent.delete(t);
  }
}
