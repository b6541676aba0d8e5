/**
 * What a webhook delivery carries: OpenAI's event envelope, `{"id": "evt_…", "object": "event", "created_at": <unix
 * seconds>, "type": "response.completed", "data": {"id": "resp_…"}}`, the form its SDK's `webhooks.unwrap()` parses.
 * The event id is also the delivery's `webhook-id` header, the same on every retry, so a receiver can drop repeats.
 */

/** The events an endpoint can be sent, each named as OpenAI names it where OpenAI has it. */
export const webhookEventTypes = [
  'response.completed',
  'response.failed',
  'response.cancelled',
  'batch.completed',
  'batch.failed',
  'batch.expired',
  'batch.cancelled',
  'request.completed',
  'request.failed',
  'request.cancelled',
  'request.expired',
] as const;

export type WebhookEventType = (typeof webhookEventTypes)[number];

export const isWebhookEventType = (text: string): text is WebhookEventType =>
  (webhookEventTypes as readonly string[]).includes(text);

/** A JSON value, as `data`'s other fields may hold. */
export type Json = string | number | boolean | null | readonly Json[] | { readonly [key: string]: Json };

export type WebhookEvent = {
  /** `evt_…`, made from the id of what it is about (`webhookEventId` in eventTypes.ts). */
  readonly id: string;
  readonly type: WebhookEventType;
  /** When the event happened, in milliseconds since the epoch; the envelope says it in whole seconds. */
  readonly createdAtMs: number;
  /** The object the event is about: `data.id` is its id (`resp_…`, `batch_…`, `req_…`). */
  readonly data: { readonly id: string; readonly [key: string]: Json };
};

/** The envelope of an event, as the object the body is. */
export const webhookEnvelope = (event: WebhookEvent) => ({
  id: event.id,
  object: 'event' as const,
  created_at: Math.floor(event.createdAtMs / 1000),
  type: event.type,
  data: event.data,
});

/** The body of a delivery: the envelope as JSON text, which is what is signed and sent byte for byte. */
export const webhookBody = (event: WebhookEvent): string => JSON.stringify(webhookEnvelope(event));
