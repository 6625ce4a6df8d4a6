import { describe, expect, it } from 'vitest';
import { BadRequest, decodeSegment, parseRequestTarget } from './request-target.js';

describe('request target parsing', () => {
  it('splits path and query without decoding the path', () => {
    const t = parseRequestTarget('/desktop/a%20b?token=x&y=%zz');
    expect(t.pathname).toBe('/desktop/a%20b');
    expect(t.query.get('token')).toBe('x');
    expect(t.query.get('y')).toBe('%zz');
  });

  it('"//", "//host/x", absolute-form and empty targets are a BadRequest, never a TypeError', () => {
    // `new URL('//', base)` throws "Invalid URL": the crash of issue 18.
    expect(() => new URL('//', 'http://127.0.0.1:1')).toThrow(TypeError);
    expect(parseRequestTarget('//').pathname).toBe('//');
    expect(parseRequestTarget('//evil.example/x').pathname).toBe('//evil.example/x');
    for (const bad of ['', undefined, 'http://x/', '*', 'x']) expect(() => parseRequestTarget(bad)).toThrow(BadRequest);
  });

  it('a bad percent-encoding is a BadRequest (400), not a URIError', () => {
    expect(decodeSegment('a%20b')).toBe('a b');
    expect(() => decodeURIComponent('%E0')).toThrow(URIError);
    expect(() => decodeSegment('%E0')).toThrow(BadRequest);
    expect(() => decodeSegment('%')).toThrow(/not valid percent-encoded UTF-8/);
  });
});
