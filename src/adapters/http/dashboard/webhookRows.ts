import { couldBeId } from '../../../domain/identifiers.js';
import type { DeliveryState } from '../../../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../../../domain/webhook/endpoint.js';
import type { WebhookBacklog } from '../../../ports/Store.js';
import type { DeliveryRow, WebhookEndpointRow } from './views/pages.js';

/** Webhook endpoints and deliveries as the Webhooks pages show them (rows of views/). */

/** An endpoint as the Webhooks pages show it (never its secret; a removed one is not listed). */
const endpointRowOf = (endpoint: WebhookEndpointState): WebhookEndpointRow => ({
  id: endpoint.endpointId,
  url: endpoint.url,
  events: endpoint.events,
  status: endpoint.status === 'disabled' ? 'disabled' : 'enabled',
  createdAt: endpoint.createdAt,
  lastDeliveredAt: endpoint.lastDeliveredAt,
  disabledAt: endpoint.disabledAt,
  failingSince: endpoint.status === 'enabled' ? endpoint.failingSince : undefined,
});

/** The same with its backlog and next attempt (issue 42). */
export const endpointRowWith = (endpoint: WebhookEndpointState, backlog: WebhookBacklog): WebhookEndpointRow => ({
  ...endpointRowOf(endpoint),
  backlog,
});

const gaveUpWords = {
  retention: 'its retries ran out',
  endpoint_disabled: 'the endpoint was disabled',
  endpoint_removed: 'the endpoint was removed',
} as const;

/** Where the dashboard shows what an event is about: a request (`resp_X` is the Responses face of `req_X`). */
const dataHrefOf = (dataId: string): string | undefined => {
  if (couldBeId('request', dataId)) return `/dashboard/requests/${dataId}`;
  const asRequest = `req_${dataId.slice('resp_'.length)}`;
  return dataId.startsWith('resp_') && couldBeId('request', asRequest) ? `/dashboard/requests/${asRequest}` : undefined;
};

export const deliveryRowOf = ({ status, context: c }: DeliveryState): DeliveryRow => ({
  id: c.deliveryId,
  eventType: c.eventType,
  dataId: c.dataId,
  dataHref: dataHrefOf(c.dataId),
  status: status === 'none' ? 'waiting' : status,
  gaveUpReason: status === 'gave_up' && c.gaveUpReason !== undefined ? gaveUpWords[c.gaveUpReason] : undefined,
  attempts: c.attempts,
  lastAttemptAt: c.lastAttemptAt,
  lastStatus: c.lastStatus,
  lastLatencyMs: c.lastLatencyMs,
  lastError: c.lastError,
  // A delivery recorded before issue 42 keeps only its last attempt: shown from its last attempt's fields.
  recentAttempts:
    c.recentAttempts ??
    (c.lastAttemptAt === undefined
      ? []
      : [
          {
            attempt: c.attempts,
            at: c.lastAttemptAt,
            status: c.lastStatus,
            latencyMs: c.lastLatencyMs,
            error: c.lastError,
          },
        ]),
  createdAt: c.createdAt,
});
