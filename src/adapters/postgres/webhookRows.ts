import type { DeliveryState } from '../../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../../domain/webhook/endpoint.js';
import { webhookDeliveryId, webhookEventId } from '../../domain/webhook/eventTypes.js';
import { webhookDueKeyOf } from '../../storage/projection.js';

/**
 * The columns of the webhook rows (schema.ts, migration 6) that their indexes are over, each a function of the view
 * the projection writes (projection.ts): the writer sets them from it, `replay --verify` checks them against it.
 */

/** An account's endpoints that are not removed (accountWebhookEndpointKeyOf): listed, by creation time. */
export const webhookEndpointColumns = (state: WebhookEndpointState) => ({
  account_id: state.accountId,
  created_at: state.createdAt,
  listed: state.status !== 'removed',
});

/** An endpoint's delivery log (endpointWebhookDeliveryKeyOf) and its due deliveries (webhookDueKeyOf: the time it
 * may next be attempted, while it waits or is being sent; null once it is settled). */
export const webhookDeliveryColumns = (state: DeliveryState) => ({
  endpoint_id: state.context.endpointId,
  created_at: state.context.createdAt,
  due_at: (webhookDueKeyOf(state) as [string, number, string] | undefined)?.[1] ?? null,
});

/**
 * What every delivery id of the webhook events about a request or batch starts with: `wh_` and the source's id body
 * (eventTypes.ts; the event type's code and the endpoint follow). Made through the domain's own ids (with a
 * placeholder endpoint) so it cannot drift from them; a wrong prefix would only cost a read, never a wrong answer
 * (overlay.ts takes a prefix as read only for ids that start with it).
 */
export const deliveryPrefixOf = (sourceId: string): string => {
  const eventId = webhookEventId(sourceId, 'request.completed');
  const typeCode = eventId.slice(-2);
  const sample = webhookDeliveryId(eventId, 'x_');
  return sample.slice(0, sample.length - typeCode.length);
};
