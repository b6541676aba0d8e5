import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks signing (issue 30), as OpenAI signs and its SDK's `client.webhooks.unwrap()` verifies: a secret is
 * `whsec_` + the base64 of 32 random bytes; a delivery carries `webhook-id`, `webhook-timestamp` (seconds) and
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, one `v1,…` per secret, separated by spaces,
 * while a rotation lets two secrets sign.
 */

const secretPrefix = 'whsec_';

/** A new signing secret, shown once to the account holder and kept beside the log to sign with. */
export const newWebhookSecret = (): string => `${secretPrefix}${randomBytes(32).toString('base64')}`;

/** The key bytes a secret stands for. */
const keyOf = (secret: string): Buffer => Buffer.from(secret.slice(secretPrefix.length), 'base64');

/** The headers of one attempt of delivery `webhookId` sent at `timestampSeconds`, signed by each of `secrets`. */
export const webhookHeaders = (
  webhookId: string,
  timestampSeconds: number,
  body: string,
  secrets: readonly string[],
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> => {
  const timestamp = String(Math.floor(timestampSeconds));
  const signed = `${webhookId}.${timestamp}.${body}`;
  const signatures = secrets.map(
    (secret) => `v1,${createHmac('sha256', keyOf(secret)).update(signed, 'utf8').digest('base64')}`,
  );
  return { 'webhook-id': webhookId, 'webhook-timestamp': timestamp, 'webhook-signature': signatures.join(' ') };
};
