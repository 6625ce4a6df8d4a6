import { describe, expect, it } from 'vitest';
import { headerOf, parseRequestHead } from './http-head.js';

describe('reading a request head', () => {
  it('reads the request line and the headers in order', () => {
    const h = parseRequestHead('GET http://a:80/x?y HTTP/1.1\r\nHost: a:80\r\nX-Two:  2 \r\n');
    expect(h).toEqual({
      method: 'GET',
      target: 'http://a:80/x?y',
      version: 'HTTP/1.1',
      headers: [
        ['Host', 'a:80'],
        ['X-Two', '2'],
      ],
    });
    expect(headerOf(h!, 'host')).toBe('a:80');
    expect(headerOf(h!, 'missing')).toBeNull();
  });

  it('refuses what is not a head: a bad request line, a header without a name, a name with a space', () => {
    expect(parseRequestHead('hello')).toBeNull();
    expect(parseRequestHead('GET / HTTP/2.0')).toBeNull();
    expect(parseRequestHead('GET / HTTP/1.1\r\n: x')).toBeNull();
    expect(parseRequestHead('GET / HTTP/1.1\r\nBad Name: x')).toBeNull();
  });
});
