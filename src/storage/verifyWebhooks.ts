import { isDeepStrictEqual } from 'node:util';
import { webhookSecretCredentialKey } from '../domain/webhook/commands.js';
import { canApplyToDelivery, type DeliveryState, initialDeliveryState } from '../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../domain/webhook/endpoint.js';
import { isWebhookDeliveryEvent, type WebhookEvent } from '../domain/webhook/events.js';
import { type IndexKey, type IndexName, projectWebhookEvent, type ViewAccess } from './projection.js';
import { compareIndex } from './verifyBatches.js';
import { keyText } from './verifyReport.js';

type WebhookIndex = Extract<IndexName, 'accountWebhookEndpoints' | 'webhookDue' | 'endpointWebhookDeliveries'>;
const webhookIndexes: readonly WebhookIndex[] = ['accountWebhookEndpoints', 'webhookDue', 'endpointWebhookDeliveries'];

/**
 * Webhook endpoints and deliveries rebuilt from the log for `replay --verify` on either store, by the projection the
 * write path runs (projectWebhookEvent) over views kept in maps: endpoints are few, and deliveries are kept as long as
 * the log holds them.
 */
export const createWebhookFold = () => {
  const endpoints = new Map<string, WebhookEndpointState>();
  const deliveries = new Map<string, DeliveryState>();
  const indexes: Record<WebhookIndex, Map<string, string>> = {
    accountWebhookEndpoints: new Map(),
    webhookDue: new Map(),
    endpointWebhookDeliveries: new Map(),
  };
  const unexpected = () => {
    throw new Error('a webhook event touched a view other than webhooks');
  };
  const views = {
    getWebhookEndpoint: (id: string) => endpoints.get(id),
    putWebhookEndpoint: (id: string, state: WebhookEndpointState) => void endpoints.set(id, state),
    getWebhookDelivery: (id: string) => deliveries.get(id),
    putWebhookDelivery: (id: string, state: DeliveryState) => void deliveries.set(id, state),
    putIndex: (index: IndexName, key: IndexKey, value: string) =>
      void indexes[index as WebhookIndex].set(keyText(key), value),
    removeIndex: (index: IndexName, key: IndexKey) => void indexes[index as WebhookIndex].delete(keyText(key)),
    getIndex: unexpected,
  } as unknown as ViewAccess;
  return {
    endpoints: endpoints as ReadonlyMap<string, WebhookEndpointState>,
    deliveries: deliveries as ReadonlyMap<string, DeliveryState>,
    indexes: indexes as Readonly<Record<WebhookIndex, ReadonlyMap<string, string>>>,
    /** Folds a webhook event; false when the delivery machine does not accept it (the decider emits none such). */
    event(event: WebhookEvent): boolean {
      if (isWebhookDeliveryEvent(event)) {
        const before = deliveries.get(event.deliveryId) ?? initialDeliveryState;
        if (!canApplyToDelivery(before, event)) return false;
      }
      projectWebhookEvent(views, event);
      return true;
    },
  };
};

export type WebhookFold = ReturnType<typeof createWebhookFold>;

/**
 * The credentials the log's endpoints call for: each endpoint not removed keeps its secret, and the one its last
 * rotation replaced (a rotation forgets the secret before that; a removal forgets both).
 */
export const webhookSecretKeysOf = (fold: WebhookFold): string[] =>
  [...fold.endpoints.values()]
    .filter((endpoint) => endpoint.status !== 'removed')
    .flatMap((endpoint) => [endpoint.secretId, endpoint.previousSecret?.secretId])
    .filter((secretId): secretId is string => secretId !== undefined)
    .map(webhookSecretCredentialKey);

export type StoredWebhookViews = {
  readonly endpoints: Iterable<{ readonly id: string; readonly view: WebhookEndpointState }>;
  readonly deliveries: Iterable<{ readonly id: string; readonly view: DeliveryState }>;
  readonly indexes: Readonly<Record<WebhookIndex, Iterable<{ readonly key: IndexKey; readonly value: string }>>>;
};

const compareViews = <V>(
  what: string,
  stored: Iterable<{ readonly id: string; readonly view: V }>,
  rebuilt: ReadonlyMap<string, V>,
  differ: (message: string) => void,
  asStored: (wanted: V, stored: V) => V = (wanted) => wanted,
) => {
  const seen = new Set<string>();
  for (const { id, view } of stored) {
    seen.add(id);
    const rebuiltView = rebuilt.get(id);
    const wanted = rebuiltView === undefined ? undefined : asStored(rebuiltView, view);
    if (wanted === undefined) differ(`${what} ${id}: stored but not produced by the log`);
    else if (!isDeepStrictEqual(view, wanted)) differ(`${what} ${id}: the stored view differs from the log's`);
  }
  for (const id of rebuilt.keys()) if (!seen.has(id)) differ(`${what} ${id}: produced by the log but not stored`);
};

/**
 * A delivery's view written by an airs before issue 42 keeps no `recentAttempts` (the rest is the same): the rebuilt
 * view is compared without them there, so that upgrading does not make `replay --verify` report every delivery.
 */
const withoutNewerAttempts = (wanted: DeliveryState, stored: DeliveryState): DeliveryState => {
  if (stored.context.recentAttempts !== undefined || wanted.context.recentAttempts === undefined) return wanted;
  const { recentAttempts: _kept, ...context } = wanted.context;
  return { ...wanted, context };
};

/** Compares the rebuilt endpoints, deliveries and their three indexes with the stored ones, both ways. */
export const compareWebhookViews = (
  fold: WebhookFold,
  stored: StoredWebhookViews,
  differ: (message: string) => void,
): { readonly endpoints: number; readonly deliveries: number } => {
  compareViews('webhook endpoint', stored.endpoints, fold.endpoints, differ);
  compareViews('webhook delivery', stored.deliveries, fold.deliveries, differ, withoutNewerAttempts);
  for (const index of webhookIndexes) compareIndex(index, stored.indexes[index], fold.indexes[index], differ);
  return { endpoints: fold.endpoints.size, deliveries: fold.deliveries.size };
};
