/**
 * How the webhook sender posts one attempt (issue 30): the adapter (`adapters/webhooks/transport.ts`, over
 * `sender.ts`) resolves and checks the host, connects to the address checked, follows no redirect, reads at most 64 KiB
 * of the answer and ends within 10 s. It never throws: what happened is the result.
 */

export type WebhookPost = {
  readonly url: string;
  /** The exact text that was signed. */
  readonly body: string;
  /** The Standard Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`). */
  readonly headers: Readonly<Record<string, string>>;
};

export type WebhookPostResult = {
  /** A 2xx came in time. */
  readonly delivered: boolean;
  readonly status: number | undefined;
  readonly latencyMs: number;
  /** What went wrong, in words for the delivery log (never a header, never the body); none when delivered. */
  readonly error: string | undefined;
};

export type WebhookTransport = (post: WebhookPost) => Promise<WebhookPostResult>;
