import * as Context from 'effect/Context';
import type * as Effect from 'effect/Effect';
import type { AccountLimitReached, Refused } from '../../domain/errors.js';
import type { DeliveryState } from '../../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../../domain/webhook/endpoint.js';
import type { EndpointWithBacklog, RecoverResult } from './recover.js';

/**
 * An account's webhook endpoints and their deliveries, as the CLI (`airs webhooks …`) and the dashboard's Webhooks
 * page manage them (issue 30). Every change is a command decided inside the store's write; every answer is read
 * back from the views once it is durable. Calls name the account they act for: another account's endpoint or
 * delivery is answered as unknown (`Refused`, "no webhook endpoint …").
 */

/** An endpoint as shown once, at its creation or at a rotation: the only moment its signing secret is shown. */
export type EndpointWithSecret = {
  readonly endpoint: WebhookEndpointState;
  /** `whsec_…`, to verify deliveries with (`client.webhooks.unwrap(body, headers, secret)`). */
  readonly secret: string;
};

export interface WebhooksShape {
  /**
   * Adds an endpoint for `url`, receiving `events` (names as `--events` lists them; empty: every type). The URL is
   * checked (https unless `webhooks.allowHttp`; no private address unless `webhooks.allowPrivateNetworks`, its host
   * resolved now), the plan's bound counted inside the write.
   */
  add(
    accountId: string,
    url: string,
    events: readonly string[],
  ): Effect.Effect<EndpointWithSecret, Refused | AccountLimitReached>;
  /** The account's endpoints that are not removed, oldest first. */
  list(accountId: string): Effect.Effect<readonly WebhookEndpointState[], Refused>;
  /** The same, each with its backlog (deliveries not settled, counted to `maxBacklogCounted`) and next attempt. */
  listWithBacklog(accountId: string): Effect.Effect<readonly EndpointWithBacklog<WebhookEndpointState>[], Refused>;
  /**
   * The calls below name an endpoint or delivery by its id, which names its account too: `accountId` undefined acts
   * for that account (as `airs requests cancel ID` does); given, it must be the owner (else: unknown, as before).
   */
  remove(accountId: string | undefined, endpointId: string): Effect.Effect<WebhookEndpointState, Refused>;
  /** A new secret; the one it replaces still signs for 24 hours (every delivery then carries both signatures). */
  rotateSecret(accountId: string | undefined, endpointId: string): Effect.Effect<EndpointWithSecret, Refused>;
  /** Turns a disabled endpoint back on (missed deliveries: `redeliver`). */
  enable(accountId: string | undefined, endpointId: string): Effect.Effect<WebhookEndpointState, Refused>;
  /** Redelivers the endpoint's given-up deliveries of events at or after `since` (recover.ts: bounded per call). */
  recover(accountId: string | undefined, endpointId: string, since: number): Effect.Effect<RecoverResult, Refused>;
  /** An endpoint's deliveries, newest first, `limit` at most (and older than `before`, a delivery id of the last
   * page). */
  deliveries(
    accountId: string | undefined,
    endpointId: string,
    page: { readonly limit: number; readonly before?: string | undefined },
  ): Effect.Effect<readonly DeliveryState[], Refused>;
  /** Makes a delivered or given-up delivery due again at once, with the same `webhook-id`. */
  redeliver(accountId: string | undefined, deliveryId: string): Effect.Effect<DeliveryState, Refused>;
}

export class Webhooks extends Context.Service<Webhooks, WebhooksShape>()('airs/Webhooks') {}
