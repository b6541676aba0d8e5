import { lookup } from 'node:dns/promises';
import { ipFamily, nonPublicKind } from '../../domain/webhook/addresses.js';

/**
 * Where a webhook goes: its URL read and checked, and its host resolved to the one address it will be sent to. The
 * same rules when an endpoint is added and at every attempt, since what a name resolves to may change in between
 * (DNS rebinding): the sender connects to the address checked here, and asks no resolver again.
 */

/** What the operator allows beyond the safe default. */
export type DestinationPolicy = {
  /** `http://` URLs too (`webhooks.allowHttp`); otherwise only `https://`. */
  readonly allowHttp?: boolean;
  /** Loopback, private, link-local, metadata and other non-public addresses (`webhooks.allowPrivateNetworks`). */
  readonly allowPrivateNetworks?: boolean;
};

/** The addresses a host name resolves to, as `dns.lookup` gives them with `all: true`. */
export type Resolver = (hostname: string) => Promise<readonly { readonly address: string; readonly family: number }[]>;

/** The system's resolver (what `dns.lookup` asks: /etc/hosts, then DNS), every address in the order given. */
export const systemResolver: Resolver = (hostname) => lookup(hostname, { all: true, order: 'verbatim' });

/** The longest webhook URL taken: what browsers and proxies handle everywhere. */
export const maxWebhookUrlLength = 2048;

/** A webhook's destination, checked: the URL, and the address its host resolved to, to connect to. */
export type Destination = {
  readonly url: URL;
  /** The host as the Host header and TLS's SNI name it: the URL's, IPv6 without brackets. */
  readonly hostname: string;
  readonly address: string;
  readonly family: 4 | 6;
};

export type DestinationCheck =
  | { readonly ok: true; readonly destination: Destination }
  /** `unresolved`: the host name could not be resolved (a failed attempt); `refused`: the rules forbid it. */
  | { readonly ok: false; readonly kind: 'refused' | 'unresolved'; readonly problem: string };

const refused = (problem: string): DestinationCheck => ({ ok: false, kind: 'refused', problem });

/** What is wrong with a webhook URL as written, before any name is resolved; undefined if nothing. */
export const webhookUrlFormProblem = (text: string, policy: DestinationPolicy): string | undefined => {
  if (text.length > maxWebhookUrlLength)
    return `a webhook URL has at most ${maxWebhookUrlLength} characters; this one has ${text.length}`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'a webhook URL is an absolute URL, like https://example.com/webhooks';
  }
  if (url.protocol === 'http:' && !policy.allowHttp)
    return 'a webhook URL must start with https:// (http:// only where the operator allows it: webhooks.allowHttp)';
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'a webhook URL must start with https://';
  // A user and password in the URL would be sent in the clear to whoever the URL names, and shown wherever it is.
  if (url.username !== '' || url.password !== '') return 'a webhook URL must not hold a user name or password';
  if (url.hostname === '') return 'a webhook URL names a host';
  return undefined;
};

const bareHost = (hostname: string) =>
  hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;

/**
 * Checks a webhook URL and resolves its host: every address the name resolves to must be allowed (an attacker's
 * name that resolves to a public and a private address is refused, whichever a client would pick), and the first
 * is the one to connect to. Never throws.
 */
export const checkDestination = async (
  text: string,
  policy: DestinationPolicy,
  resolve: Resolver = systemResolver,
): Promise<DestinationCheck> => {
  const formProblem = webhookUrlFormProblem(text, policy);
  if (formProblem !== undefined) return refused(formProblem);
  const url = new URL(text);
  const hostname = bareHost(url.hostname);
  const literal = ipFamily(hostname);
  let addresses: readonly { readonly address: string; readonly family: number }[];
  if (literal !== undefined) addresses = [{ address: hostname, family: literal }];
  else {
    try {
      addresses = await resolve(hostname);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      const why = typeof code === 'string' ? code : 'no address';
      return { ok: false, kind: 'unresolved', problem: `${hostname.slice(0, 253)} could not be resolved (${why})` };
    }
    if (addresses.length === 0)
      return { ok: false, kind: 'unresolved', problem: `${hostname.slice(0, 253)} resolves to no address` };
  }
  for (const { address } of addresses) {
    const kind = nonPublicKind(address);
    if (kind === undefined) continue;
    // Even with private networks allowed, only an IP address may be connected to.
    if (policy.allowPrivateNetworks && ipFamily(address) !== undefined) continue;
    const shown = address.slice(0, 60);
    const words =
      literal === undefined ? `${hostname.slice(0, 253)} resolves to ${shown}, ${kind}` : `${shown} is ${kind}`;
    return refused(`${words}; webhooks are sent only to public addresses (webhooks.allowPrivateNetworks)`);
  }
  const first = addresses[0] as { readonly address: string };
  return {
    ok: true,
    destination: { url, hostname, address: first.address, family: ipFamily(first.address) as 4 | 6 },
  };
};
