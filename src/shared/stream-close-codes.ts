/**
 * WebSocket close codes for the app's streams (screen, terminal): distinct, so a client (the viewer,
 * the renderer, a test) can tell why a stream was refused or ended. The one table; servers and
 * clients import it from here.
 */
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
  /**
   * A terminal's sandbox is being restored: its shell ended with the old sandbox and comes back under
   * the same terminal id (listTerminals shows it `restarting` until then); the viewer reattaches.
   */
  restarting: 4012,
  /** The viewer broke the protocol. */
  protocolError: 1003,
  /** An event stream's client read too slowly: it reconnects with `since` and catches up. */
  tooSlow: 4008,
} as const;

export type CloseCode = (typeof CLOSE)[keyof typeof CLOSE];

/** The close codes that mean "the ticket was refused" (a client asks for a new one). */
export const TICKET_REFUSALS: readonly CloseCode[] = [CLOSE.ticketUnknown, CLOSE.ticketUsed, CLOSE.ticketExpired];
