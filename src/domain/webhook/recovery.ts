import type { DeliveryState } from './deliveryState.js';
import type { WebhookEndpointState } from './endpoint.js';
import type { WebhookDeliveryReleased, WebhookEndpointRecovered } from './events.js';

/**
 * An endpoint back from an outage (issue 42). Its first delivered attempt after a run of failures is its recovery
 * (`WebhookEndpointRecovered`, in the write that records the success); from then on, while it keeps answering, each
 * of its deliveries that waits for a retry after failing before the recovery is due at once, not at its retry time
 * (a backoff grown to an hour would otherwise trickle a backlog in over hours). They are still sent no faster than
 * the endpoint's in-flight bound: the sender's places (sendPlaces.ts) and the due read's `perEndpoint` take them.
 *
 * A delivery is made due so at most once until it is redelivered (`releasedAt`): one that fails again (a body its
 * receiver refuses) goes back to its backoff, and is not retried at every later success of its endpoint.
 */

/** The recovery a delivered attempt makes, at `at`: when the endpoint was failing (it is enabled). */
export const recoveryOf = (
  endpoint: WebhookEndpointState | undefined,
  at: number,
): WebhookEndpointRecovered | undefined =>
  endpoint !== undefined && endpoint.status === 'enabled' && endpoint.failingSince !== undefined
    ? { type: 'WebhookEndpointRecovered', endpointId: endpoint.endpointId, failingSince: endpoint.failingSince, at }
    : undefined;

/** Whether the endpoint releases waiting deliveries now: it recovered, and has not failed since. */
export const releasesDeliveries = (
  endpoint: WebhookEndpointState | undefined,
): endpoint is WebhookEndpointState & {
  readonly recoveredAt: number;
} =>
  endpoint !== undefined &&
  endpoint.status === 'enabled' &&
  endpoint.failingSince === undefined &&
  endpoint.recoveredAt !== undefined;

/**
 * Whether `delivery` is due at `now` by its endpoint's recovery though its retry is later: it waits for a retry after
 * an attempt made before the recovery, was not released before, and has not reached its retention.
 */
export const releasedByRecovery = (
  delivery: DeliveryState,
  endpoint: WebhookEndpointState | undefined,
  now: number,
): boolean => {
  const c = delivery.context;
  return (
    delivery.status === 'waiting' &&
    c.availableAt > now &&
    now < c.giveUpAt &&
    c.releasedAt === undefined &&
    c.lastAttemptAt !== undefined &&
    releasesDeliveries(endpoint) &&
    c.lastAttemptAt <= endpoint.recoveredAt
  );
};

/** The event that makes it due at `now` (before its attempt's start, in the same write). */
export const releaseOf = (delivery: DeliveryState, now: number): WebhookDeliveryReleased => ({
  type: 'WebhookDeliveryReleased',
  deliveryId: delivery.context.deliveryId,
  endpointId: delivery.context.endpointId,
  at: now,
});

/** How many of an endpoint's due-index entries past `now` one look reads for released ones (the rest: later looks). */
export const releaseScan = 256;
