import { describe, expect, it } from 'vitest';
import { CLOSE, TicketBook } from './tickets.js';

describe('TicketBook', () => {
  it('a ticket works once', () => {
    const book = new TicketBook<{ v: string }>();
    const t = book.issue({ v: 'x' });
    expect(t).toMatch(/^[0-9a-f]{32}$/);
    expect(book.redeem(t)).toEqual({ ok: true, grant: { v: 'x' } });
    expect(book.redeem(t)).toMatchObject({ ok: false, code: CLOSE.ticketUsed });
  });

  it('an expired ticket is refused as expired', () => {
    let now = 1000;
    const book = new TicketBook<number>(30_000, () => now);
    const t = book.issue(1);
    now += 30_001;
    expect(book.redeem(t)).toMatchObject({ ok: false, code: CLOSE.ticketExpired });
  });

  it('missing and unknown tickets are refused as unknown', () => {
    const book = new TicketBook<number>();
    expect(book.redeem(undefined)).toMatchObject({ ok: false, code: CLOSE.ticketUnknown });
    expect(book.redeem('0'.repeat(32))).toMatchObject({ ok: false, code: CLOSE.ticketUnknown });
  });

  it('the refusal codes are distinct', () => {
    expect(new Set([CLOSE.ticketUnknown, CLOSE.ticketUsed, CLOSE.ticketExpired, CLOSE.originRefused]).size).toBe(4);
  });
});
