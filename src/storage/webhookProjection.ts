/** What a webhook event does to the views: its endpoint's and delivery's views, and their index entries. */
import { type DeliveryState, evolveDelivery, initialDeliveryState } from '../domain/webhook/delivery.js';
import { evolveEndpoint, type WebhookEndpointState } from '../domain/webhook/endpoint.js';
import { isWebhookDeliveryEvent, type WebhookEvent } from '../domain/webhook/events.js';
import { moveIndex } from './indexMoves.js';
import type { IndexKey, ViewAccess } from './viewAccess.js';

/** An account's webhook endpoints that are not removed, oldest first: [accountId, createdAt, endpointId] → ''. */
export const accountWebhookEndpointKeyOf = (state: WebhookEndpointState): IndexKey => [
  state.accountId,
  state.createdAt,
  state.endpointId,
];

/**
 * A delivery that waits for an attempt, by endpoint then by when it may next be attempted (`availableAt`; while an
 * attempt is being sent: the end of its lease, when another sender may take it over): [endpointId, at, deliveryId]
 * → ''. By endpoint first, so that a sender takes each endpoint's earliest in turn and an endpoint with a backlog of
 * thousands (a dead one) holds back no other (storage/webhookReads.ts).
 */
export const webhookDueKeyOf = (state: DeliveryState): IndexKey | undefined => {
  const { endpointId, availableAt, leaseUntil, deliveryId } = state.context;
  if (state.status === 'waiting') return [endpointId, availableAt, deliveryId];
  if (state.status === 'sending') return [endpointId, leaseUntil ?? availableAt, deliveryId];
  return undefined;
};

/** An endpoint's deliveries, by the time of the event they are about (its delivery log, newest first):
 * [endpointId, createdAt, deliveryId] → ''. */
export const endpointWebhookDeliveryKeyOf = (state: DeliveryState): IndexKey => [
  state.context.endpointId,
  state.context.createdAt,
  state.context.deliveryId,
];

/**
 * Applies one webhook event: its endpoint's view (an endpoint's own events, and its deliveries' outcomes, which tell
 * whether it is failing) and its entry among its account's endpoints; a delivery's view and its entries in the due
 * index and its endpoint's delivery log.
 */
export const projectWebhookEvent = (views: ViewAccess, event: WebhookEvent): void => {
  const endpointBefore = views.getWebhookEndpoint(event.endpointId);
  const endpointAfter = evolveEndpoint(endpointBefore, event);
  if (endpointAfter !== undefined && endpointAfter !== endpointBefore) {
    views.putWebhookEndpoint(event.endpointId, endpointAfter);
    const listed = (state: WebhookEndpointState | undefined) => state !== undefined && state.status !== 'removed';
    if (!listed(endpointBefore) && listed(endpointAfter))
      views.putIndex('accountWebhookEndpoints', accountWebhookEndpointKeyOf(endpointAfter), '');
    if (listed(endpointBefore) && !listed(endpointAfter))
      views.removeIndex('accountWebhookEndpoints', accountWebhookEndpointKeyOf(endpointAfter));
  }
  if (!isWebhookDeliveryEvent(event)) return;
  const before = views.getWebhookDelivery(event.deliveryId) ?? initialDeliveryState;
  const after = evolveDelivery(before, event);
  if (after === before) return;
  views.putWebhookDelivery(event.deliveryId, after);
  if (before.status === 'none') views.putIndex('endpointWebhookDeliveries', endpointWebhookDeliveryKeyOf(after), '');
  moveIndex(views, 'webhookDue', webhookDueKeyOf(before), webhookDueKeyOf(after));
};
