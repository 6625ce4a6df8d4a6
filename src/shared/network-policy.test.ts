import { describe, expect, it } from 'vitest';
import { allowEntryProblem, isAllowed, normalizeAllowEntry, parseAllowEntry, type AllowRule } from './network-policy.js';

const rules = (...e: string[]): AllowRule[] => e.map(parseAllowEntry);

describe('allow entries', () => {
  it.each([
    ['example.com', { kind: 'host', host: 'example.com', port: null }],
    ['Example.COM.', { kind: 'host', host: 'example.com', port: null }],
    ['example.com:443', { kind: 'host', host: 'example.com', port: 443 }],
    ['localhost:8080', { kind: 'host', host: 'localhost', port: 8080 }],
    ['*.example.com', { kind: 'wildcard', suffix: 'example.com', port: null }],
    ['*.example.com:443', { kind: 'wildcard', suffix: 'example.com', port: 443 }],
  ])('accepts %s', (entry, rule) => {
    expect(parseAllowEntry(entry)).toEqual(rule);
  });

  it.each(['10.0.0.0/8', '192.168.1.5', '192.168.1.5:8080', 'fd00::/8', '::1', '[2001:db8::1]:443', '0.0.0.0/0', '::/0'])(
    'accepts the address form %s',
    (e) => {
      expect(parseAllowEntry(e).kind).toBe('cidr');
    },
  );

  it.each([
    ['', 'empty'],
    ['not a host', 'spaces'],
    ['exa_mple.com', 'label'],
    ['foo.*.example.com', 'wildcard'],
    ['*example.com', 'wildcard'],
    ['example.*', 'wildcard'],
    ['**.example.com', 'wildcard'],
    ['-bad.example.com', 'label'],
    ['10.0.0.0/33', 'prefix'],
    ['10.0.0.0/-1', 'prefix'],
    ['fd00::/129', 'prefix'],
    ['10.0.0.300/8', 'not an IPv4'],
    ['example.com/8', 'not an IPv4'],
    ['example.com:0', 'outside 1-65535'],
    ['example.com:70000', 'outside 1-65535'],
    ['example.com:http', 'not a number'],
    ['example.com:', 'not a number'],
    ['1.2.3', 'IP address'],
    ['[zz::1]:443', 'IPv6'],
    ['1:2:3:4:5:6:7:8:9', 'neither'],
  ])('refuses %j (%s) and says what a valid one looks like', (entry, why) => {
    const p = allowEntryProblem(entry);
    expect(p).toContain(why);
    try {
      parseAllowEntry(entry);
    } catch (err) {
      expect((err as { code: string }).code).toBe('invalid_input');
      expect((err as { hint: string }).hint).toMatch(/\*\.example\.com.*10\.0\.0\.0\/8/);
    }
  });

  it('normalizes what it stores', () => {
    expect(normalizeAllowEntry('  API.Example.com.:443 ')).toBe('api.example.com:443');
  });
});

describe('matching', () => {
  it('matches exact hosts, with or without a port', () => {
    const r = rules('example.com', 'api.test:443');
    expect(isAllowed(r, 'example.com', 80)).toBe(true);
    expect(isAllowed(r, 'EXAMPLE.com.', 443)).toBe(true);
    expect(isAllowed(r, 'api.test', 443)).toBe(true);
    expect(isAllowed(r, 'api.test', 80)).toBe(false);
    expect(isAllowed(r, 'www.example.com', 80)).toBe(false);
    expect(isAllowed(r, 'example.com.evil.net', 80)).toBe(false);
  });

  it('a wildcard matches subdomains only', () => {
    const r = rules('*.example.com');
    expect(isAllowed(r, 'a.example.com', 443)).toBe(true);
    expect(isAllowed(r, 'a.b.example.com', 443)).toBe(true);
    expect(isAllowed(r, 'example.com', 443)).toBe(false);
    expect(isAllowed(r, 'badexample.com', 443)).toBe(false);
  });

  it('a raw IP is allowed only by a CIDR, never by a name', () => {
    const r = rules('example.com', '10.1.0.0/16', 'fd00::/8', '192.168.1.5:8080');
    expect(isAllowed(r, '10.1.2.3', 80)).toBe(true);
    expect(isAllowed(r, '10.2.0.1', 80)).toBe(false);
    expect(isAllowed(r, '::ffff:10.1.2.3', 80)).toBe(true);
    expect(isAllowed(r, '[fd12::1]', 443)).toBe(true);
    expect(isAllowed(r, '[2001:db8::1]', 443)).toBe(false);
    expect(isAllowed(r, '192.168.1.5', 8080)).toBe(true);
    expect(isAllowed(r, '192.168.1.5', 8081)).toBe(false);
    expect(isAllowed(rules('example.com'), '93.184.216.34', 443)).toBe(false);
  });

  it('an empty list allows nothing', () => {
    expect(isAllowed([], 'example.com', 443)).toBe(false);
  });
});
