import type { WebhookCommand } from '../../domain/webhook/commands.js';
import type { DeliveryState } from '../../domain/webhook/delivery.js';
import type { StoreShape, WebhookBacklog } from '../../ports/Store.js';

/**
 * Recover (issue 42, as Svix's "recover"): the deliveries of one endpoint that ended failed (given up) for events
 * since a time are sent again. Each is redelivered as `airs webhooks redeliver` does it: the same delivery and
 * `webhook-id`, due at once, with new attempts and a new retention (a receiver that deduplicates on `webhook-id`
 * sees each event once). Bounded per call: `maxRecoverScan` deliveries read (newest first, 100 a page), at most
 * `maxRecovered` redelivered; `more` says a bound stopped it (call again).
 */
export const maxRecovered = 1_000;
export const maxRecoverScan = 10_000;
const page = 100;

export type RecoverResult = {
  /** Deliveries made due again. */
  readonly redelivered: number;
  /** Deliveries read from the endpoint's log (those since `since`). */
  readonly scanned: number;
  /** A bound stopped the call before it reached events older than `since`: there may be more to recover. */
  readonly more: boolean;
};

/** The deliveries to redeliver: given up, about an event at or after `since`, newest first, bounded. */
export const failedSince = async (
  store: StoreShape,
  endpointId: string,
  since: number,
): Promise<{ readonly failed: readonly DeliveryState[]; readonly scanned: number; readonly more: boolean }> => {
  const failed: DeliveryState[] = [];
  let scanned = 0;
  let before: { createdAt: number; deliveryId: string } | undefined;
  for (;;) {
    const found = await store.reads.webhookDeliveriesOf(endpointId, { limit: page, before });
    for (const delivery of found) {
      if (delivery.context.createdAt < since) return { failed, scanned, more: false };
      if (failed.length >= maxRecovered || scanned >= maxRecoverScan) return { failed, scanned, more: true };
      scanned++;
      if (delivery.status === 'gave_up') failed.push(delivery);
    }
    const last = found.at(-1);
    if (found.length < page || last === undefined) return { failed, scanned, more: false };
    before = { createdAt: last.context.createdAt, deliveryId: last.context.deliveryId };
  }
};

/** The redelivery command of one of them. */
export const redeliveryOf = (
  delivery: DeliveryState,
  accountId: string,
  retentionMs: number,
  policy: { readonly baseDelayMs: number; readonly maxDelayMs: number; readonly minDelayMs: number },
  now: number,
): WebhookCommand => ({
  type: 'WebhookDelivery',
  deliveryId: delivery.context.deliveryId,
  command: { type: 'Redeliver', accountId, policy: { ...policy, maxTotalMs: retentionMs }, now },
});

/** How many of an endpoint's deliveries the list counts at most (it says "1000+" beyond). */
export const maxBacklogCounted = 1_000;

/** An endpoint as the list shows it (issue 42): with its backlog and the time of its next attempt. */
export type EndpointWithBacklog<E> = { readonly endpoint: E; readonly backlog: WebhookBacklog };
