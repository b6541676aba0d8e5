import type { DeliveryState } from '../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../domain/webhook/endpoint.js';
import type { DeliveryPage, DueDeliveries, DueDeliveriesAsk } from '../ports/Store.js';
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
        for (const key of keys('webhookDue', { start, end })) {
          const [endpointId, at, deliveryId] = key as [string, number, string];
          if (endpoint === undefined) {
            endpoint = endpointId;
            endpoints++;
            if (ask.passOver?.(endpointId)) break;
          } else if (endpointId !== endpoint) break;
          if (at > now) {
            if (next === undefined || at < next) next = at;
            break;
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

  return { webhookEndpointsOf, webhookDeliveriesOf, dueWebhookDeliveries };
};
