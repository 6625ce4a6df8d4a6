import { randomUUID } from 'node:crypto';
import { ErrorCode, JSONRPCMessageSchema, type JSONRPCMessage, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { describeBytes } from './mcp-limits.js';

/** A JSON-RPC error response (the spec's shape; id null when the request's id could not be read). */
export interface JsonRpcErrorReply {
  jsonrpc: '2.0';
  id: JsonRpcId;
  error: { code: number; message: string; data?: unknown };
}

export const errorReply = (id: JsonRpcId, code: number, message: string, data?: unknown): JsonRpcErrorReply => ({
  jsonrpc: '2.0',
  id,
  error: { code, message, ...(data === undefined ? {} : { data }) },
});

const validId = (v: unknown): v is RequestId => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));

/** What one incoming message is: a message for the protocol, or the error reply it deserves. */
export type Classified = { ok: true; message: JSONRPCMessage } | { ok: false; reply: JsonRpcErrorReply };

/** Parses one message: not JSON → -32700; JSON but not one JSON-RPC 2.0 message → -32600. */
export function classifyMessage(text: string, aliases: IdAliases): Classified {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, reply: errorReply(null, ErrorCode.ParseError, `Parse error: ${(err as Error).message}`) };
  }
  return classifyValue(value, aliases);
}

const kindOf = (v: unknown): string => (Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`);

/**
 * A request's id as JSON-RPC 2.0 allows it (a string, a number, or null): those the SDK takes (strings,
 * integers) pass as they are; null and fractional numbers, which the SDK's schema refuses ("Unrecognized
 * key: id"), get an alias the SDK takes, and their answer carries the client's id again (IdAliases).
 * Anything else is refused, saying what an id may be.
 */
function admitRequestId(
  value: Record<string, unknown>,
  aliases: IdAliases,
): { ok: true; value: Record<string, unknown> } | { ok: false; reply: JsonRpcErrorReply } {
  const id = value.id;
  if (typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id))) return { ok: true, value };
  if (id === null || (typeof id === 'number' && Number.isFinite(id))) return { ok: true, value: { ...value, id: aliases.add(id) } };
  const why =
    typeof id === 'number'
      ? 'a number too large to be echoed back exactly'
      : // Parsed from JSON: it has a JSON text.
        `${kindOf(id)} (${JSON.stringify(id).slice(0, 40)})`;
  return {
    ok: false,
    reply: errorReply(
      null,
      ErrorCode.InvalidRequest,
      `Invalid Request: the id is ${why}; a JSON-RPC 2.0 id is a string, a number or null (or left out, for a notification)`,
    ),
  };
}

export function classifyValue(value: unknown, aliases: IdAliases): Classified {
  if (Array.isArray(value))
    return {
      ok: false,
      reply: errorReply(null, ErrorCode.InvalidRequest, 'Invalid Request: batches are not supported; send one JSON-RPC message at a time'),
    };
  let candidate = value;
  if (value && typeof value === 'object' && 'method' in value && 'id' in value) {
    const admitted = admitRequestId(value, aliases);
    if (admitted.ok === false) return admitted;
    candidate = admitted.value;
  }
  const parsed = JSONRPCMessageSchema.safeParse(candidate);
  if (parsed.success) return { ok: true, message: parsed.data };
  if (candidate !== value) aliases.forget((candidate as { id: string }).id);
  const id = value && typeof value === 'object' && validId((value as { id?: unknown }).id) ? (value as { id: RequestId }).id : null;
  const issue = parsed.error.issues[0];
  return {
    ok: false,
    reply: errorReply(
      id,
      ErrorCode.InvalidRequest,
      `Invalid Request: not a JSON-RPC 2.0 message${issue ? ` (${issue.path.join('.') || 'message'}: ${issue.message})` : ''}`,
    ),
  };
}

/** A JSON-RPC 2.0 request id as a client may send it. */
export type JsonRpcId = string | number | null;

/**
 * The ids the SDK cannot carry (null, fractional numbers), each replaced by an alias while its request
 * is served: `add` on the way in, `restore` (or `restoreOnWire`) on the way out, so the answer carries
 * exactly the id the client sent.
 */
export class IdAliases {
  private readonly ids = new Map<string, JsonRpcId>();

  add(id: JsonRpcId): string {
    // Random, so no id a client chooses can be taken for an alias.
    const alias = `sandbox-desk-id-alias:${randomUUID()}`;
    this.ids.set(alias, id);
    return alias;
  }

  forget(alias: string): void {
    this.ids.delete(alias);
  }

  has(id: unknown): id is string {
    return typeof id === 'string' && this.ids.has(id);
  }

  /** The answer with the client's own id in place of its alias (a transport that writes the message itself). */
  restore(message: JSONRPCMessage): JSONRPCMessage {
    const id = 'id' in message ? message.id : undefined;
    if (!this.has(id) || 'method' in message) return message;
    const original = this.ids.get(id);
    this.ids.delete(id);
    return { ...message, id: original } as unknown as JSONRPCMessage;
  }

  /**
   * For a transport that still needs the alias to route the answer (the SDK's HTTP transport finds the
   * request's response by id): the message keeps the alias, its JSON carries the client's id.
   */
  restoreOnWire(message: JSONRPCMessage): JSONRPCMessage {
    const id = 'id' in message ? message.id : undefined;
    if (!this.has(id) || 'method' in message) return message;
    const wire = this.restore(message);
    // Not enumerable: schemas that check the message's keys do not see it; JSON.stringify does.
    return Object.defineProperty({ ...message }, 'toJSON', { value: () => wire, enumerable: false });
  }
}

/** An id's JSON text: a number (fractions and exponents too), a string, or null. */
const ID_TEXT = String.raw`-?\d{1,15}(?:\.\d{1,15})?(?:[eE][+-]?\d{1,3})?|"(?:[^"\\]|\\.){0,200}"|null`;

/**
 * The id of a message too large to parse, read from its first and last bytes: clients put `"id"`
 * first or (the SDK) last. Null when neither end shows one.
 */
export function sniffId(head: string, tail: string): JsonRpcId {
  const atEnd = new RegExp(`"id"\\s*:\\s*(${ID_TEXT})\\s*\\}\\s*$`).exec(tail);
  const atStart = new RegExp(`^\\s*\\{\\s*(?:"jsonrpc"\\s*:\\s*"2\\.0"\\s*,\\s*)?"id"\\s*:\\s*(${ID_TEXT})`).exec(head);
  const raw = atEnd?.[1] ?? atStart?.[1];
  if (raw === undefined) return null;
  try {
    const v = JSON.parse(raw) as unknown;
    return validId(v) ? v : null;
  } catch {
    return null;
  }
}

export function tooLargeReply(id: JsonRpcId, size: number | null, limit: number): JsonRpcErrorReply {
  return errorReply(
    id,
    ErrorCode.InvalidRequest,
    `Invalid Request: the message${size === null ? '' : ` of ${size} bytes`} is larger than the ${describeBytes(limit)} this transport carries; send files in chunks (write_file with offset, read_file with offset and maxBytes)`,
    { limit, ...(size === null ? {} : { size }) },
  );
}

/**
 * Keeps the first and last few KiB of a message that is too large to keep whole, and counts it,
 * so its id can still be answered.
 */
export class OversizeSniffer {
  private head = Buffer.alloc(0);
  private tail = Buffer.alloc(0);
  size = 0;

  push(chunk: Buffer): void {
    this.size += chunk.length;
    if (this.head.length < 4096) this.head = Buffer.concat([this.head, chunk.subarray(0, 4096 - this.head.length)]);
    this.tail = Buffer.concat([this.tail, chunk.subarray(Math.max(0, chunk.length - 1024))]);
    if (this.tail.length > 1024) this.tail = this.tail.subarray(this.tail.length - 1024);
  }

  id(): JsonRpcId {
    return sniffId(this.head.toString('utf8'), this.tail.toString('utf8'));
  }
}
