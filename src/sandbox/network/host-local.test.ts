import { networkInterfaces } from 'node:os';
import { describe, expect, it } from 'vitest';
import { hostLocalReason } from './host-local.js';

describe('host-local addresses (what an allowed name may not lead to without a CIDR entry)', () => {
  it('loopback, unspecified, link-local and private ranges, in every form an address can take', () => {
    const cases: Array<[string, string]> = [
      ['127.0.0.1', 'loopback'],
      ['127.255.1.2', 'loopback'],
      ['::1', 'loopback'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:7f00:1', 'loopback'],
      ['0.0.0.0', 'unspecified'],
      ['::', 'unspecified'],
      ['::127.0.0.1', 'IPv4-compatible'],
      ['169.254.169.254', 'link-local'],
      ['fe80::1%eth0', 'link-local'],
      ['febf::1', 'link-local'],
      ['10.0.0.1', 'private'],
      ['172.16.0.1', 'private'],
      ['172.31.255.255', 'private'],
      ['192.168.1.1', 'private'],
      ['::ffff:192.168.1.1', 'private'],
      ['100.64.0.1', 'shared address space (CGNAT)'],
      ['100.127.255.255', 'shared address space (CGNAT)'],
      ['fc00::1', 'private (unique local)'],
      ['fd12:3456::1', 'private (unique local)'],
      ['fec0::1', 'site-local'],
      ['not-an-address', 'not an address'],
    ];
    for (const [a, why] of cases) expect(hostLocalReason(a), a).toBe(why);
  });

  it('public addresses, and the edges just outside each range, are not', () => {
    for (const a of [
      '8.8.8.8',
      '1.1.1.1',
      '172.15.255.255',
      '172.32.0.0',
      '100.63.255.255',
      '100.128.0.0',
      '169.253.0.1',
      '11.0.0.1',
      '2001:4860:4860::8888',
      'fe00::1',
      '2606:4700::1111',
    ])
      expect(hostLocalReason(a), a).toBeNull();
  });

  it("this machine's own interface addresses, whatever range they are in", () => {
    const own = Object.values(networkInterfaces())
      .flat()
      .map((a) => a!.address);
    expect(own.length).toBeGreaterThan(0);
    for (const a of own) expect(hostLocalReason(a), a).not.toBeNull();
  });
});
