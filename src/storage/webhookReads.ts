import type { DeliveryState } from '../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../domain/webhook/endpoint.js';
import { releasedByRecovery, releaseScan, releasesDeliveries } from '../domain/webhook/recovery.js';
import type { DeliveryPage, DueDeliveries, DueDeliveriesAsk, WebhookBacklog } from '../ports/Store.js';
import { type OrderedIndexes, pastPrefix } from './orderedIndexes.js';
import type { IndexKey } from './projection.js';

/**
 * The webhook reads of a store whose indexes are ordered maps read at once (LMDB, memory), written once over the
 * one thing they need of each: a range of an index's keys (orderedIndexes.ts).
 */
export type KeyRange = OrderedIndexes['keys'];

export type WebhookViews = {
  readonly webhookEndpoint: (endpointId: string) => WebhookEndpointState | undefined;
  readonly webhookDelivery: (deliveryId: string) => DeliveryState | undefined;
};

/** How many endpoints with deliveries waiting one look at the due index reads at most (the rest: the next look). */
export const dueEndpointScan = 256;

export const webhookReadsOf = (keys: KeyRange, views: WebhookViews) => {
  const webhookEndpointsOf = (accountId: string): WebhookEndpointState[] => {
    const found: WebhookEndpointState[] = [];
    for (const key of keys('accountWebhookEndpoints', { start: [accountId], end: [pastPrefix(accountId)] })) {
      const endpoint = views.webhookEndpoint((key as [string, number, string])[2]);
      if (endpoint !== undefined) found.push(endpoint);
    }
    return found;
  };

  const webhookDeliveriesOf = (endpointId: string, { before, limit }: DeliveryPage): DeliveryState[] => {
    const found: DeliveryState[] = [];
    if (!(limit > 0)) return found;
    const start = before === undefined ? [pastPrefix(endpointId)] : [endpointId, before.createdAt, before.deliveryId];
    for (const key of keys('endpointWebhookDeliveries', { start, end: [endpointId], reverse: true })) {
      const [, createdAt, deliveryId] = key as [string, number, string];
      if (before !== undefined && createdAt === before.createdAt && deliveryId === before.deliveryId) continue;
      const delivery = views.webhookDelivery(deliveryId);
      if (delivery !== undefined) found.push(delivery);
      if (found.length >= limit) break;
    }
    return found;
  };

  /**
   * Deliveries that may be attempted at `now`: each endpoint's earliest in turn, starting after `ask.after` and
   * wrapping round to it, at most `perEndpoint` of each and `limit` in all, endpoints `ask.passOver` names read past;
   * and the earliest time after `now` at which one of the endpoints looked at has one due (when to look again, if
   * nothing else happens). One seek per endpoint with deliveries waiting (its first keys read on from there),
   * `dueEndpointScan` endpoints at most; `stoppedAt` names the last one when a bound stopped the read.
   */
  const dueWebhookDeliveries = (now: number, ask: DueDeliveriesAsk): DueDeliveries => {
    const due: { deliveryId: string; endpointId: string }[] = [];
    let next: number | undefined;
    let endpoints = 0;
    let lastLooked: string | undefined;
    /** Reads from `from` up to `end`; true when a bound stopped it (nothing more to read in this look). */
    const lap = (from: IndexKey, end: IndexKey): boolean => {
      let start = from;
      for (;;) {
        if (due.length >= ask.limit || endpoints >= dueEndpointScan) return true;
        let endpoint: string | undefined;
        let taken = 0;
        /** Past `now`: the endpoint's deliveries its recovery made due are read on for (recovery.ts), a bounded few. */
        let released: WebhookEndpointState | undefined;
        let later = 0;
        for (const key of keys('webhookDue', { start, end })) {
          const [endpointId, at, deliveryId] = key as [string, number, string];
          if (endpoint === undefined) {
            endpoint = endpointId;
            endpoints++;
            if (ask.passOver?.(endpointId)) break;
          } else if (endpointId !== endpoint) break;
          if (at > now) {
            if (next === undefined || at < next) next = at;
            if (taken >= ask.perEndpoint || due.length >= ask.limit) break;
            if (later === 0) {
              const view = views.webhookEndpoint(endpointId);
              if (!releasesDeliveries(view)) break;
              released = view;
            }
            if (++later > releaseScan) break;
            const delivery = views.webhookDelivery(deliveryId);
            if (delivery === undefined || !releasedByRecovery(delivery, released, now)) continue;
          }
          if (taken >= ask.perEndpoint || due.length >= ask.limit) break;
          due.push({ deliveryId, endpointId });
          taken++;
        }
        if (endpoint === undefined) return false;
        lastLooked = endpoint;
        // Past every key of this endpoint: [endpointId, ...] sorts before [endpointId + '\0'].
        start = [pastPrefix(endpoint)];
      }
    };
    const from = ask.after;
    const stopped =
      from === undefined
        ? lap([''], [pastPrefix('\uffff')])
        : lap([pastPrefix(from)], [pastPrefix('\uffff')]) || lap([''], [pastPrefix(from)]);
    return {
      due,
      ...(next === undefined ? {} : { next }),
      ...(stopped && lastLooked !== undefined ? { stoppedAt: lastLooked } : {}),
    };
  };

  /** How many deliveries of an endpoint wait or are being sent (`limit` at most counted), and the earliest time one
   * is next attempted: what the list shows (issue 42). One range of the due index, `limit` + 1 keys at most. */
  const webhookBacklog = (endpointId: string, limit: number): WebhookBacklog => {
    let waiting = 0;
    let nextAttemptAt: number | undefined;
    for (const key of keys('webhookDue', { start: [endpointId], end: [pastPrefix(endpointId)] })) {
      const at = (key as [string, number, string])[1];
      if (waiting >= limit)
        return { waiting, truncated: true, ...(nextAttemptAt === undefined ? {} : { nextAttemptAt }) };
      waiting++;
      nextAttemptAt = nextAttemptAt === undefined ? at : Math.min(nextAttemptAt, at);
    }
    return { waiting, truncated: false, ...(nextAttemptAt === undefined ? {} : { nextAttemptAt }) };
  };

  return { webhookEndpointsOf, webhookDeliveriesOf, dueWebhookDeliveries, webhookBacklog };
};
