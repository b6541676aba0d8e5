import { createHmac } from 'node:crypto';

/**
 * Idempotent creates of the admin API, exact across processes and nodes with nothing stored: what a create makes is
 * named by an HMAC of the `Idempotency-Key` under the calling admin key's secret. The same key sent again (by the
 * same admin key) names the same account, or the same API key with the same secret, which the write then finds
 * already made: the call answers what it made the first time. No one without the admin key's secret can compute
 * them, and an account key's secret is never stored (only its hash, as for every key).
 */
const mac = (secret: string, ...parts: string[]): Buffer =>
  createHmac('sha256', secret).update(parts.join('\u0000')).digest();

/** The account a create with this idempotency key makes: `acct_` and 96 bits, as a random one. */
export const idempotentAccountId = (adminSecret: string, idempotencyKey: string): string =>
  `acct_${mac(adminSecret, 'account', idempotencyKey).subarray(0, 12).toString('base64url')}`;

/** The API key (its id and secret) a key create with this idempotency key makes for the account. */
export const idempotentApiKey = (
  adminSecret: string,
  accountId: string,
  idempotencyKey: string,
): { readonly keyId: string; readonly key: string } => ({
  keyId: `key_${mac(adminSecret, 'key id', accountId, idempotencyKey).subarray(0, 12).toString('base64url')}`,
  key: `sk_${mac(adminSecret, 'key', accountId, idempotencyKey).toString('base64url')}`,
});
