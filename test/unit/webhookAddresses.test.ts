import { describe, expect, it } from 'vitest';
import { addressProblem, ipFamily, parseIpv6 } from '../../src/domain/webhook/addresses.js';

// Issue 30, "Safe by default": a webhook is sent only to an address of the public internet unless the operator
// allows private networks: never to the server's own loopback, the network behind it, or a cloud's metadata service.

describe('webhook destination addresses', () => {
  it.each([
    ['127.0.0.1', 'a loopback address'],
    ['127.255.255.254', 'a loopback address'],
    ['10.0.0.1', 'a private (RFC 1918) address'],
    ['172.16.0.1', 'a private (RFC 1918) address'],
    ['172.31.255.255', 'a private (RFC 1918) address'],
    ['192.168.1.1', 'a private (RFC 1918) address'],
    ['169.254.169.254', 'a cloud metadata address'],
    ['169.254.0.1', 'a link-local address'],
    ['100.64.0.1', 'a shared (CGNAT) address'],
    ['100.127.255.255', 'a shared (CGNAT) address'],
    ['0.0.0.0', 'an unspecified ("this network") address'],
    ['224.0.0.1', 'a multicast address'],
    ['255.255.255.255', 'a reserved or broadcast address'],
    ['192.0.2.10', 'a documentation address'],
    ['::1', 'a loopback address'],
    ['::', 'an unspecified address'],
    ['0:0:0:0:0:0:0:1', 'a loopback address'],
    ['::ffff:127.0.0.1', 'an IPv4-mapped form of a loopback address'],
    ['::ffff:7f00:1', 'an IPv4-mapped form of a loopback address'],
    ['::ffff:a9fe:a9fe', 'an IPv4-mapped form of a cloud metadata address'],
    ['::ffff:10.1.2.3', 'an IPv4-mapped form of a private (RFC 1918) address'],
    ['64:ff9b::127.0.0.1', 'a NAT64 form of a loopback address'],
    ['2002:7f00:1::', 'a 6to4 form of a loopback address'],
    ['::127.0.0.1', 'an IPv4-compatible (deprecated) address'],
    ['fc00::1', 'a unique-local address'],
    ['fd00:ec2::254', 'a unique-local address'],
    ['fe80::1', 'a link-local address'],
    ['fe80::1%eth0', 'a link-local address'],
    ['ff02::1', 'a multicast address'],
    ['2001:db8::1', 'a documentation address'],
    ['[::1]', 'a loopback address'],
  ])('%s is refused as %s', (address, kind) => {
    expect(addressProblem(address)).toBe(`${address} is ${kind}`);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '100.128.0.1',
    '169.255.0.1',
    '11.0.0.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
  ])('%s, of the public internet, is allowed', (address) => {
    expect(addressProblem(address)).toBeUndefined();
  });

  it.each(['localhost', '1.2.3', '256.1.1.1', '1::2::3', '::ffff:1.2.3.999', '12345::', 'x'.repeat(1000), ''])(
    '%s, no IP address, is refused',
    (text) => {
      expect(addressProblem(text)).toMatch(/is not an IP address$/);
      expect(ipFamily(text)).toBeUndefined();
    },
  );

  it('reads every IPv6 form to the same eight groups', () => {
    const loopback = [0, 0, 0, 0, 0, 0, 0, 1];
    for (const form of ['::1', '0::1', '0:0:0:0:0:0:0:1', '::0.0.0.1', '0000:0000:0000:0000:0000:0000:0000:0001'])
      expect(parseIpv6(form)).toEqual(loopback);
    expect(parseIpv6('1:2:3:4:5:6:7:8:9')).toBeUndefined();
    expect(parseIpv6('1:2:3:4:5:6:7::8')).toBeUndefined();
    expect(ipFamily('[2001:db8::1]')).toBe(6);
    expect(ipFamily('10.0.0.1')).toBe(4);
  });
});
