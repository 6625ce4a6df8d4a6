/**
 * The agents' call log as `sandbox-desk calls` prints it, read through the client (the service owns the
 * store): the last `limit` calls, oldest first, paged back by id, since one `callLog` answer holds at
 * most CALL_LOG_PAGE calls and `--jsonl` exports every one.
 */
import type { CallLogEntry } from '../shared/call-log-types.js';
import type { DeskClient } from '../client/http-client.js';

/** The contract's most calls per `callLog` answer. */
export const CALL_LOG_PAGE = 10_000;

export interface CallLogFilter {
  sandbox?: string | undefined;
  session?: string | undefined;
}

export async function readCallLog(client: Pick<DeskClient, 'call'>, filter: CallLogFilter, limit: number): Promise<CallLogEntry[]> {
  const pages: CallLogEntry[][] = [];
  let got = 0;
  let beforeId: number | undefined;
  while (got < limit) {
    const want = Math.min(CALL_LOG_PAGE, limit - got);
    const page = await client.call('callLog', {
      ...(filter.sandbox !== undefined ? { sandbox: filter.sandbox } : {}),
      ...(filter.session !== undefined ? { session: filter.session } : {}),
      limit: want,
      ...(beforeId !== undefined ? { beforeId } : {}),
    });
    pages.unshift(page);
    got += page.length;
    // A short page is the start of the log.
    if (page.length < want || page.length === 0) break;
    beforeId = page[0]!.id;
  }
  // `calls` prints the receipts as they were written: the connections the service links to a call are
  // `network log`'s to show (each line with its callId), so this command's output stays what it was.
  return pages.flat().map(({ connections: _linked, ...entry }) => entry);
}
