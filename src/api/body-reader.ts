import type { IncomingMessage } from 'node:http';
import { SandboxDeskError } from '../shared/errors.js';

/** The default cap of a contract call's body, in bytes. */
export const API_BODY_MAX_BYTES = 64 * 1024;

/**
 * JSON may spell one byte of a string in six (`\u0001`): a body carrying N bytes of text needs room
 * for 6·N, so text within its own limit is never refused for its spelling.
 */
const JSON_STRING_EXPANSION = 6;

/**
 * A contract call's body limit: 64 KiB, except for a call that carries text a config setting lets be
 * larger — `desktopClipboard`'s text, up to `clipboard.maxBytes` (issue 35: it stopped at 64 KiB).
 */
export function callBodyLimit(method: string, limits: { clipboardMaxBytes: number }): number {
  if (method === 'desktopClipboard') return API_BODY_MAX_BYTES + JSON_STRING_EXPANSION * limits.clipboardMaxBytes;
  return API_BODY_MAX_BYTES;
}

export class BodyTooLarge extends SandboxDeskError {
  constructor(readonly limit: number) {
    super('invalid_input', `request body is larger than ${limit} bytes`, { hint: 'send less per call' });
  }
}

/**
 * Reads a request body as bytes, counting *bytes* against `limit` (not UTF-16 units), and decodes it
 * as UTF-8 once at the end, so a character split across chunks arrives whole. Invalid UTF-8 is
 * refused rather than silently replaced.
 */
export async function readBodyText(
  req: AsyncIterable<Buffer | string> & Partial<Pick<IncomingMessage, 'headers'>>,
  limit: number,
): Promise<string> {
  const declared = Number(req.headers?.['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw new BodyTooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += b.length;
    if (size > limit) throw new BodyTooLarge(limit);
    chunks.push(b);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks, size));
  } catch {
    throw new SandboxDeskError('invalid_input', 'request body is not valid UTF-8');
  }
}

/** A contract call's body: a JSON object (empty body: `{}`). */
export async function readJsonObject(
  req: AsyncIterable<Buffer | string> & Partial<Pick<IncomingMessage, 'headers'>>,
  limit = API_BODY_MAX_BYTES,
): Promise<Record<string, unknown>> {
  const raw = await readBodyText(req, limit);
  if (!raw) return {};
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    throw new SandboxDeskError('invalid_input', 'request body is not JSON');
  }
  if (!v || typeof v !== 'object' || Array.isArray(v))
    throw new SandboxDeskError('invalid_input', "request body must be a JSON object of the method's params");
  return v as Record<string, unknown>;
}
