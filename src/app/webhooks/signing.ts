import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com), which OpenAI's SDK checks in `webhooks.unwrap()`:
 * the headers `webhook-id`, `webhook-timestamp` (unix seconds) and `webhook-signature`, a space-separated list of
 * `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, one for each secret in force. A secret is `whsec_` and the
 * base64 of its key bytes. During a rotation a delivery is signed with the old and the new secret, and a receiver
 * that knows either accepts it.
 */

/** Key bytes of a new secret: 256 bits, HMAC-SHA256's block of strength. */
const secretBytes = 32;

const secretPrefix = 'whsec_';

/** Padded base64. */
const base64Pattern = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A new signing secret: `whsec_` and 32 random bytes in base64, shown once to the endpoint's owner. */
export const newWebhookSecret = (): string => `${secretPrefix}${randomBytes(secretBytes).toString('base64')}`;

/** What is wrong with a signing secret, if anything (its value never in the words: it is a secret). */
export const webhookSecretProblem = (secret: string): string | undefined => {
  if (!secret.startsWith(secretPrefix)) return `a webhook signing secret starts with ${secretPrefix}`;
  const encoded = secret.slice(secretPrefix.length);
  // Standard Webhooks keys are 24 to 64 bytes; the test of the form comes after the bound on its length.
  if (encoded.length < 32 || encoded.length > 88 || !base64Pattern.test(encoded))
    return `a webhook signing secret is ${secretPrefix} and the base64 of 24 to 64 bytes`;
  return undefined;
};

/** One `v1,<base64>` signature of a delivery with one secret. */
export const webhookSignature = (secret: string, id: string, timestamp: number, body: string): string => {
  const problem = webhookSecretProblem(secret);
  if (problem !== undefined) throw new Error(problem);
  const key = Buffer.from(secret.slice(secretPrefix.length), 'base64');
  const signature = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`, 'utf8').digest('base64');
  return `v1,${signature}`;
};

export type SignedHeaders = {
  readonly 'webhook-id': string;
  readonly 'webhook-timestamp': string;
  readonly 'webhook-signature': string;
};

/**
 * The Standard Webhooks headers of a delivery of `body` (the exact bytes sent), signed with each of `secrets` (one,
 * or two during a rotation). `timestampMs` is when this attempt is made: each retry is signed anew, with its own
 * time, so that a receiver's check that the timestamp is recent (5 minutes in OpenAI's SDK) passes on a late retry.
 */
export const signWebhook = (input: {
  readonly id: string;
  readonly timestampMs: number;
  readonly body: string;
  readonly secrets: readonly string[];
}): SignedHeaders => {
  if (input.secrets.length === 0) throw new Error('a webhook delivery is signed with at least one secret');
  const timestamp = Math.floor(input.timestampMs / 1000);
  return {
    'webhook-id': input.id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': input.secrets
      .map((secret) => webhookSignature(secret, input.id, timestamp, input.body))
      .join(' '),
  };
};
