import { idForms } from '../identifiers.js';

import { isWebhookEventType, type WebhookEventType, webhookEventTypes } from './envelope.js';

/**
 * The events an account's webhook endpoints can receive are envelope.ts's `webhookEventTypes` (OpenAI's names for
 * Responses and batches, airs' own for every request). Their order is part of the ids made here: an event id ends
 * with two characters naming its type's place in that list, so a type is only ever added at the end.
 */
export { isWebhookEventType, type WebhookEventType, webhookEventTypes } from './envelope.js';

/**
 * Which events an endpoint receives: the listed types, or every type when the list is empty (an endpoint added
 * without `--events` receives all, and so every type added later too).
 */
export type EventFilter = readonly WebhookEventType[];

export const filterMatches = (filter: EventFilter, type: WebhookEventType): boolean =>
  filter.length === 0 || filter.includes(type);

/**
 * The filter a caller's list names (`--events a,b`, or the dashboard's boxes): each name trimmed, repeats dropped, in
 * the order of `webhookEventTypes`. An unknown name is refused with the list of known ones, never ignored: an
 * endpoint that silently receives nothing is the failure webhooks users complain of. At most as many names as there
 * are types are read (the caller's text is bounded before it gets here).
 */
export const parseEventFilter = (names: readonly string[]): EventFilter | { readonly problem: string } => {
  if (names.length > 4 * webhookEventTypes.length)
    return { problem: `at most ${webhookEventTypes.length} event types can be named; ${names.length} were` };
  const chosen = new Set<WebhookEventType>();
  for (const raw of names) {
    const name = raw.trim();
    if (!isWebhookEventType(name))
      return {
        problem: `unknown webhook event type "${name.slice(0, 64)}"; known types: ${webhookEventTypes.join(', ')}`,
      };
    chosen.add(name);
  }
  return webhookEventTypes.filter((type) => chosen.has(type));
};

const base64url = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** Two base64url characters for the type's place in the list (room for 4,096 types). */
const typeCode = (type: WebhookEventType): string => {
  const index = webhookEventTypes.indexOf(type);
  return `${base64url[Math.floor(index / 64)]}${base64url[index % 64]}`;
};

/** The id body of a request (`req_X`) or batch (`batch_X`) id: `X`. */
const bodyOf = (sourceId: string): string => sourceId.slice(sourceId.indexOf('_') + 1);

/**
 * The id of the webhook event `type` about `sourceId` (a `req_…` or `batch_…` id): `evt_` + the source's id body +
 * the type's code. Made from what the event is about, never drawn at random, so the same source event always makes
 * the same id: a replay of the log, a second node folding the same event, a crash between the event and its
 * delivery all come to the same `evt_…` (receivers dedupe on it). A request and a batch reach each ending once, so
 * no two events share an id; the mapping is one to one (the code is always the last two characters).
 */
export const webhookEventId = (sourceId: string, type: WebhookEventType): string =>
  `${idForms.webhookEvent.prefix}${bodyOf(sourceId)}${typeCode(type)}`;

/**
 * The id of the delivery of event `eventId` to endpoint `endpointId`, sent as `webhook-id` on every attempt and every
 * redelivery: `wh_` + the event's id body + the endpoint's. One to one as well (endpoint ids have a fixed length).
 */
export const webhookDeliveryId = (eventId: string, endpointId: string): string =>
  `${idForms.webhookDelivery.prefix}${bodyOf(eventId)}${bodyOf(endpointId)}`;
