import { ErrorCode, JSONRPCMessageSchema, type JSONRPCMessage, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { describeBytes } from './mcp-limits.js';

/** A JSON-RPC error response (the spec's shape; id null when the request's id could not be read). */
export interface JsonRpcErrorReply {
  jsonrpc: '2.0';
  id: RequestId | null;
  error: { code: number; message: string; data?: unknown };
}

export const errorReply = (id: RequestId | null, code: number, message: string, data?: unknown): JsonRpcErrorReply => ({
  jsonrpc: '2.0',
  id,
  error: { code, message, ...(data === undefined ? {} : { data }) },
});

const validId = (v: unknown): v is RequestId => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));

/** What one incoming message is: a message for the protocol, or the error reply it deserves. */
export type Classified = { ok: true; message: JSONRPCMessage } | { ok: false; reply: JsonRpcErrorReply };

/** Parses one message: not JSON → -32700; JSON but not one JSON-RPC 2.0 message → -32600. */
export function classifyMessage(text: string): Classified {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, reply: errorReply(null, ErrorCode.ParseError, `Parse error: ${(err as Error).message}`) };
  }
  return classifyValue(value);
}

export function classifyValue(value: unknown): Classified {
  if (Array.isArray(value))
    return {
      ok: false,
      reply: errorReply(null, ErrorCode.InvalidRequest, 'Invalid Request: batches are not supported; send one JSON-RPC message at a time'),
    };
  const parsed = JSONRPCMessageSchema.safeParse(value);
  if (parsed.success) return { ok: true, message: parsed.data };
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

/**
 * The id of a message too large to parse, read from its first and last bytes: clients put `"id"`
 * first or (the SDK) last. Null when neither end shows one.
 */
export function sniffId(head: string, tail: string): RequestId | null {
  const atEnd = /"id"\s*:\s*(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")\s*\}\s*$/.exec(tail);
  const atStart = /^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")/.exec(head);
  const raw = atEnd?.[1] ?? atStart?.[1];
  if (raw === undefined) return null;
  try {
    const v = JSON.parse(raw) as unknown;
    return validId(v) ? v : null;
  } catch {
    return null;
  }
}

export function tooLargeReply(id: RequestId | null, size: number | null, limit: number): JsonRpcErrorReply {
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

  id(): RequestId | null {
    return sniffId(this.head.toString('utf8'), this.tail.toString('utf8'));
  }
}
