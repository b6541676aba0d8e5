import { randomFillSync } from 'node:crypto';
import * as Context from 'effect/Context';

/** Makers of identifiers and secrets. */
export interface IdsShape {
  /** `req_` + the creation time (ms, 12 hex digits) + 128 random bits (base64url): unguessable, sorted by creation. */
  requestId(): string;
  accountId(): string;
  keyId(): string;
  /** `sk_` + 256 random bits, base64url: the secret shown once. */
  apiKey(): string;
  /** `whep_` + 96 random bits (16 characters), as accounts and keys. */
  webhookEndpointId(): string;
  /** `whsk_` + 96 random bits: where a webhook signing secret is kept among the credentials (never shown). */
  webhookSecretId(): string;
}

export class Ids extends Context.Service<Ids, IdsShape>()('airs/Ids') {}

/** Random bytes are drawn from the OS 4 KiB at a time: one call per request cost more than the rest of its id. */
const pool = Buffer.alloc(4096);
let used = pool.length;
const random = (bytes: number): string => {
  if (used + bytes > pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  const text = pool.toString('base64url', used, used + bytes);
  used += bytes;
  return text;
};

/**
 * Time first, so that new requests land at the end of the B-trees keyed by request id: inserts touch a few pages
 * at the right edge instead of pages all over a large file (which kept the server's mapped memory growing with the
 * number of stored requests). The 128 random bits after it keep ids unguessable.
 */
let prefixTime = -1;
let prefix = '';
const timeOrderedId = (now: number) => {
  // Many ids are made in the same millisecond: its hex form is made once.
  if (now !== prefixTime) {
    prefixTime = now;
    prefix = now.toString(16).padStart(12, '0');
  }
  return `${prefix}${random(16)}`;
};

export const randomIds: IdsShape = {
  requestId: () => `req_${timeOrderedId(Date.now())}`,
  accountId: () => `acct_${random(12)}`,
  keyId: () => `key_${random(12)}`,
  apiKey: () => `sk_${random(32)}`,
  webhookEndpointId: () => `whep_${random(12)}`,
  webhookSecretId: () => `whsk_${random(12)}`,
};
