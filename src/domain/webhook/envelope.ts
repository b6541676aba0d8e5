import type { WebhookEventType } from './eventTypes.js';

/** What a delivery's body is made of (a delivery's context holds it all). */
export type EnvelopeFacts = {
  readonly eventId: string;
  readonly eventType: WebhookEventType;
  readonly dataId: string;
  readonly createdAt: number;
};

/**
 * The body every attempt of a delivery sends, in OpenAI's envelope: `{"id": "evt_…", "object": "event",
 * "created_at", "type", "data": {"id"}}`, `created_at` in seconds as OpenAI's are. Made from the delivery's facts
 * alone, so every attempt and every redelivery sends the same bytes, and no body is stored.
 */
export const webhookBody = (facts: EnvelopeFacts): string =>
  JSON.stringify({
    id: facts.eventId,
    object: 'event',
    created_at: Math.floor(facts.createdAt / 1000),
    type: facts.eventType,
    data: { id: facts.dataId },
  });
