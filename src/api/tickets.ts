import { randomBytes } from 'node:crypto';
import { CLOSE } from '../shared/stream-close-codes.js';

// The close codes live in src/shared/ (clients import them too); re-exported for the server's callers.
export { CLOSE } from '../shared/stream-close-codes.js';

export type Redeemed<G> = { ok: true; grant: G } | { ok: false; code: number; reason: string };

/**
 * Single-use, short-lived tickets for opening a stream. A ticket is 128 random bits; redeeming it
 * once consumes it. Used and expired tickets are remembered a little longer so the refusal can say
 * which it was.
 */
export class TicketBook<G> {
  private readonly live = new Map<string, { grant: G; expires: number }>();
  private readonly spent = new Map<string, number>();

  constructor(
    private readonly ttlMs = 30_000,
    private readonly now: () => number = Date.now,
  ) {}

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
