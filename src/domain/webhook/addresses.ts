/**
 * Which IP addresses a webhook may be delivered to. A webhook URL is chosen by an account, so without this rule any
 * account could make the server call what only the server can reach: its own loopback ports, the private network
 * behind it, a cloud's metadata service (169.254.169.254, fd00:ec2::254). Only addresses of the public internet pass,
 * unless the operator allows private networks (`webhooks.allowPrivateNetworks`, which the tests need).
 *
 * Pure: it reads addresses as text (the forms `dns.lookup` and the WHATWG URL parser give) and says what is wrong.
 */

/** A range of IPv4 addresses that is not the public internet, and why. */
type V4Range = readonly [first: number, prefixLength: number, what: string];

const v4 = (a: number, b: number, c: number, d: number) => ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;

/** IANA's special-purpose IPv4 registry, less the ranges that are globally reachable. */
const v4Ranges: readonly V4Range[] = [
  [v4(0, 0, 0, 0), 8, 'an unspecified ("this network") address'],
  [v4(10, 0, 0, 0), 8, 'a private (RFC 1918) address'],
  [v4(100, 64, 0, 0), 10, 'a shared (CGNAT) address'],
  [v4(127, 0, 0, 0), 8, 'a loopback address'],
  [v4(169, 254, 169, 254), 32, 'a cloud metadata address'],
  [v4(169, 254, 0, 0), 16, 'a link-local address'],
  [v4(172, 16, 0, 0), 12, 'a private (RFC 1918) address'],
  [v4(192, 0, 0, 0), 24, 'a reserved (IETF protocol) address'],
  [v4(192, 0, 2, 0), 24, 'a documentation address'],
  [v4(192, 88, 99, 0), 24, 'a reserved (6to4 relay) address'],
  [v4(192, 168, 0, 0), 16, 'a private (RFC 1918) address'],
  [v4(198, 18, 0, 0), 15, 'a benchmarking address'],
  [v4(198, 51, 100, 0), 24, 'a documentation address'],
  [v4(203, 0, 113, 0), 24, 'a documentation address'],
  [v4(224, 0, 0, 0), 4, 'a multicast address'],
  [v4(240, 0, 0, 0), 4, 'a reserved or broadcast address'],
];

const inV4Range = (address: number, [first, prefixLength]: V4Range) =>
  prefixLength === 0 || address >>> (32 - prefixLength) === first >>> (32 - prefixLength);

const v4Pattern = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** An IPv4 address in dotted-decimal form as a 32-bit number, or undefined if `text` is not one. */
export const parseIpv4 = (text: string): number | undefined => {
  const match = v4Pattern.exec(text);
  if (match === null) return undefined;
  const parts = match.slice(1).map(Number);
  if (parts.some((part) => part > 255)) return undefined;
  const [a, b, c, d] = parts as [number, number, number, number];
  return v4(a, b, c, d);
};

/** An IPv6 address (zone index dropped, an IPv4 tail allowed) as its eight 16-bit groups, or undefined. */
export const parseIpv6 = (text: string): readonly number[] | undefined => {
  const withoutZone = text.split('%')[0] as string;
  if (withoutZone.length > 45 || !/^[0-9a-fA-F:.]+$/.test(withoutZone)) return undefined;
  const halves = withoutZone.split('::');
  if (halves.length > 2) return undefined;
  const groupsOf = (part: string): number[] | undefined => {
    if (part === '') return [];
    const groups: number[] = [];
    const pieces = part.split(':');
    for (const [index, piece] of pieces.entries()) {
      if (index === pieces.length - 1 && piece.includes('.')) {
        const tail = parseIpv4(piece);
        if (tail === undefined) return undefined;
        groups.push(tail >>> 16, tail & 0xffff);
      } else if (/^[0-9a-fA-F]{1,4}$/.test(piece)) groups.push(Number.parseInt(piece, 16));
      else return undefined;
    }
    return groups;
  };
  const head = groupsOf(halves[0] as string);
  const tail = halves.length === 2 ? groupsOf(halves[1] as string) : [];
  if (head === undefined || tail === undefined) return undefined;
  if (halves.length === 1) return head.length === 8 ? head : undefined;
  const missing = 8 - head.length - tail.length;
  if (missing < 1) return undefined;
  return [...head, ...new Array<number>(missing).fill(0), ...tail];
};

const v4Problem = (address: number): string | undefined => v4Ranges.find((range) => inV4Range(address, range))?.[2];

const v4FromGroups = (high: number, low: number) => ((high << 16) | low) >>> 0;

/**
 * Why an IPv6 address (its eight groups) is not of the public internet, if it is not. Only global unicast
 * (`2000::/3`) is public, less IANA's special-purpose ranges in it; outside it, only the two forms that carry an
 * IPv4 address to the public internet (IPv4-mapped and NAT64's well-known prefix) pass, judged as that address.
 * Forms that reach an IPv4 address through a translator or tunnel of the network the server is on (RFC 8215's
 * local-use prefix, SIIT, Teredo) are refused whatever they embed: where they lead is that network's to decide.
 */
const v6Problem = (groups: readonly number[]): string | undefined => {
  const g = (index: number) => groups[index] as number;
  const zeroUpTo = (end: number) => groups.slice(0, end).every((group) => group === 0);
  if (zeroUpTo(8)) return 'an unspecified address';
  if (zeroUpTo(7) && g(7) === 1) return 'a loopback address';
  // An IPv4 address carried in IPv6 reaches that IPv4 address: it is judged as that address.
  const carried = (high: number, low: number, form: string) => {
    const problem = v4Problem(v4FromGroups(high, low));
    return problem === undefined ? undefined : `${form} of ${problem}`;
  };
  if (zeroUpTo(5) && g(5) === 0xffff) return carried(g(6), g(7), 'an IPv4-mapped form');
  if (zeroUpTo(4) && g(4) === 0xffff && g(5) === 0) return 'an IPv4-translated (SIIT, ::ffff:0:0:0/96) address';
  if (zeroUpTo(6)) return 'an IPv4-compatible (deprecated) address';
  if (g(0) === 0x64 && g(1) === 0xff9b && groups.slice(2, 6).every((group) => group === 0))
    return carried(g(6), g(7), 'a NAT64 form');
  if (g(0) === 0x64 && g(1) === 0xff9b && g(2) === 1)
    return 'a local-use IPv4/IPv6 translation (RFC 8215, 64:ff9b:1::/48) address';
  if (g(0) === 0x2002) return carried(g(1), g(2), 'a 6to4 form');
  if (g(0) === 0x2001 && g(1) === 0) return 'a Teredo (2001::/32) address';
  if (g(0) === 0x2001 && g(1) < 0x0200) return 'an IETF protocol assignment (2001::/23) address';
  if ((g(0) & 0xfe00) === 0xfc00) return 'a unique-local address';
  if ((g(0) & 0xffc0) === 0xfe80) return 'a link-local address';
  if ((g(0) & 0xffc0) === 0xfec0) return 'a site-local (deprecated) address';
  if ((g(0) & 0xff00) === 0xff00) return 'a multicast address';
  if (g(0) === 0x2001 && g(1) === 0x0db8) return 'a documentation address';
  if (g(0) === 0x3fff && g(1) < 0x1000) return 'a documentation address';
  if (g(0) === 0x0100 && g(1) === 0 && g(2) === 0 && g(3) === 0) return 'a discard-only address';
  if ((g(0) & 0xe000) !== 0x2000) return 'a reserved address (outside global unicast, 2000::/3)';
  return undefined;
};

/** Whether `text` is an IP address, and of which family (4 or 6); URL hosts come with IPv6 in brackets, dropped here. */
export const ipFamily = (text: string): 4 | 6 | undefined => {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (parseIpv4(bare) !== undefined) return 4;
  if (bare.includes(':') && parseIpv6(bare) !== undefined) return 6;
  return undefined;
};

/**
 * What kind of non-public address `address` (an IPv4 or IPv6 address as text) is, in words (`a loopback address`);
 * undefined for an address of the public internet. Text that is no IP address is refused too (`not an IP address`):
 * only an address that was checked may be connected to.
 */
export const nonPublicKind = (address: string): string | undefined => {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const four = parseIpv4(bare);
  if (four !== undefined) return v4Problem(four);
  const six = bare.includes(':') ? parseIpv6(bare) : undefined;
  if (six === undefined) return 'not an IP address';
  return v6Problem(six);
};

/** Why a webhook may not be delivered to `address`, in words that name it (`127.0.0.1 is a loopback address`). */
export const addressProblem = (address: string): string | undefined => {
  const kind = nonPublicKind(address);
  return kind === undefined ? undefined : `${address.slice(0, 60)} is ${kind}`;
};
