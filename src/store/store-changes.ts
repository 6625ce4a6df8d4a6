/**
 * One feed of "this row changed" for the tables clients show (sandboxes, sessions, leases, call log),
 * so pushed state cannot miss a writer: rather than each caller remembering to publish (the terminal's
 * prompt hook, runCommand, the MCP server's receipts all write here), the stores' write methods are
 * wrapped once, at Store construction. Over-reporting is harmless (a client re-reads); missing one is
 * not.
 */
import { Emitter, type Event } from '../shared/lifecycle.js';

export type StoreChange =
  | { table: 'sandboxes'; sandbox: string; what: string }
  | { table: 'sessions'; sandbox: string; session: string | null }
  | { table: 'leases'; sandbox: string }
  | { table: 'call_log'; sandbox: string | null; session: string | null };

type Method = (...args: never[]) => unknown;

export class StoreChanges {
  private readonly emitter = new Emitter<StoreChange>();
  readonly onChange: Event<StoreChange> = this.emitter.event;

  /** Wraps `methods` of `target` so that each call, once it returned, fires `describe(args)`. */
  watch<T extends object>(
    target: T,
    methods: Array<keyof T & string>,
    describe: (method: string, args: unknown[]) => StoreChange | null,
  ): void {
    for (const m of methods) {
      const original = target[m] as unknown as Method;
      if (typeof original !== 'function') throw new Error(`store-changes: ${m} is not a method`);
      const fire = this.emitter;
      (target as Record<string, unknown>)[m] = function (this: unknown, ...args: never[]) {
        const result = original.apply(this, args);
        const change = describe(m, args);
        if (change) fire.fire(change);
        return result;
      };
    }
  }

  dispose(): void {
    this.emitter.dispose();
  }
}
