import { describe, expect, it } from 'vitest';
import { checkDestination, type Resolver } from '../../src/adapters/webhooks/destination.js';
import { sendWebhook } from '../../src/adapters/webhooks/sender.js';
import { webhookUrlProblem } from '../../src/adapters/webhooks/urlCheck.js';
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
    // Issue 40: IPv6 forms that reach an IPv4 address through the network the server is on, and ranges no public
    // receiver is ever at, refused whatever they embed.
    ['64:ff9b:1::a00:1', 'a local-use IPv4/IPv6 translation (RFC 8215, 64:ff9b:1::/48) address'],
    ['64:ff9b:1:ffff::8.8.8.8', 'a local-use IPv4/IPv6 translation (RFC 8215, 64:ff9b:1::/48) address'],
    ['::ffff:0:127.0.0.1', 'an IPv4-translated (SIIT, ::ffff:0:0:0/96) address'],
    ['::ffff:0:808:808', 'an IPv4-translated (SIIT, ::ffff:0:0:0/96) address'],
    ['2001::1', 'a Teredo (2001::/32) address'],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'a Teredo (2001::/32) address'],
    ['2001:2::1', 'an IETF protocol assignment (2001::/23) address'],
    ['2001:1ff::1', 'an IETF protocol assignment (2001::/23) address'],
    ['3fff::1', 'a documentation address'],
    ['3fff:fff::1', 'a documentation address'],
    ['2002:c0a8:101::1', 'a 6to4 form of a private (RFC 1918) address'],
    ['2002:a9fe:a9fe::', 'a 6to4 form of a cloud metadata address'],
    ['64:ff9b::10.0.0.1', 'a NAT64 form of a private (RFC 1918) address'],
    ['::ffff:100.64.0.1', 'an IPv4-mapped form of a shared (CGNAT) address'],
    ['100:0:0:1::1', 'a reserved address (outside global unicast, 2000::/3)'],
    ['5f00::1', 'a reserved address (outside global unicast, 2000::/3)'],
    ['4000::1', 'a reserved address (outside global unicast, 2000::/3)'],
    ['::2:0:0:1', 'a reserved address (outside global unicast, 2000::/3)'],
    ['1::1', 'a reserved address (outside global unicast, 2000::/3)'],
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
    '2002:808:808::1',
    '2001:200:dff:fff1:216:3eff:feb1:44d7',
    '2001:4860:4860::8888',
    '3fff:1000::1',
    '2c0f:fb50:4003::1',
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

// The same ranges reached through DNS: a name whose AAAA answer is in one is refused when the endpoint is added and
// again at an attempt (nothing is connected to), unless the operator allows private networks.
describe('webhook destinations whose name resolves into an IPv6 translation range', () => {
  const aaaa =
    (address: string): Resolver =>
    async () => [{ address, family: 6 }];
  const signed = { body: '{}', headers: { 'webhook-id': 'wh_test' } };

  it.each([
    ['64:ff9b:1::a00:1', 'a local-use IPv4/IPv6 translation (RFC 8215, 64:ff9b:1::/48) address'],
    ['::ffff:0:7f00:1', 'an IPv4-translated (SIIT, ::ffff:0:0:0/96) address'],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'a Teredo (2001::/32) address'],
    ['2002:7f00:1::1', 'a 6to4 form of a loopback address'],
    ['64:ff9b::169.254.169.254', 'a NAT64 form of a cloud metadata address'],
  ])('a name resolving to %s is refused when added and at an attempt, naming %s', async (address, kind) => {
    const words = `hooks.test resolves to ${address}, ${kind}`;
    expect(await webhookUrlProblem('https://hooks.test/in', {}, aaaa(address))).toContain(words);
    const attempt = await sendWebhook({ ...signed, url: 'https://hooks.test/in' }, { resolve: aaaa(address) });
    expect(attempt).toMatchObject({ delivered: false, outcome: 'refused', address: undefined });
    expect(attempt.error).toContain(words);
    // Where the operator allows private networks, the address passes the check.
    const allowed = await checkDestination('https://hooks.test/in', { allowPrivateNetworks: true }, aaaa(address));
    expect(allowed).toMatchObject({ ok: true, destination: { address, family: 6 } });
  });

  it('a name resolving to a public IPv6 address is taken', async () => {
    expect(await webhookUrlProblem('https://hooks.test/in', {}, aaaa('2001:4860:4860::8888'))).toBeUndefined();
  });
});
