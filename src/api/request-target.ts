import { SandboxDeskError } from '../shared/errors.js';

/**
 * Parsing of what a client sends before any route sees it: the request target and its percent-
 * encodings. Everything here throws `BadRequest` (answered 400) and nothing else, so a hostile or
 * broken request line can never escape the server's error boundary.
 */
export class BadRequest extends SandboxDeskError {
  constructor(message: string) {
    super('invalid_input', message, { hint: 'send an origin-form request target, e.g. GET /api/call/listSandboxes' });
  }
}

export interface RequestTarget {
  /** The path exactly as sent (still percent-encoded). */
  pathname: string;
  query: URLSearchParams;
}

/** Parses `req.url` (origin-form: "/path?query"); "//", absolute-form and junk are refused, not thrown. */
export function parseRequestTarget(raw: string | undefined): RequestTarget {
  if (!raw || raw[0] !== '/') throw new BadRequest(`request target must start with "/", got ${JSON.stringify((raw ?? '').slice(0, 64))}`);
  const q = raw.indexOf('?');
  const pathname = q === -1 ? raw : raw.slice(0, q);
  const search = q === -1 ? '' : raw.slice(q + 1);
  // URLSearchParams never throws: malformed escapes stay as they were.
  return { pathname, query: new URLSearchParams(search) };
}

/** decodeURIComponent for one path segment, as a 400 instead of a URIError. */
export function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new BadRequest(`path segment ${JSON.stringify(segment.slice(0, 64))} is not valid percent-encoded UTF-8`);
  }
}
