import type { AccountEvent } from '../account/events.js';
import type { BatchEvent } from '../batch/events.js';
import type { FileEvent } from '../file/events.js';
import type { RequestEvent } from '../request/events.js';
import type { EventFilter, WebhookEventType } from './eventTypes.js';

/**
 * Events of webhook endpoints and of the deliveries to them (issue 30). A signing secret never appears here, nor its
 * hash: only `secretId`, the name under which the store keeps the secret beside the log (its credentials, as it
 * keeps password hashes), so that an export or a replay of the log holds no secret (docs/decisions.md, "Webhook
 * secrets are kept, not hashed").
 */

/** An account added an endpoint: `url` receives the events `events` names (empty: all), signed with its secret. */
export type WebhookEndpointAdded = {
  readonly type: 'WebhookEndpointAdded';
  readonly endpointId: string;
  readonly accountId: string;
  readonly url: string;
  readonly events: EventFilter;
  readonly secretId: string;
  readonly at: number;
};

/** Removed by its account: it gets no new delivery, and those pending give up. Its id is never used again. */
export type WebhookEndpointRemoved = {
  readonly type: 'WebhookEndpointRemoved';
  readonly endpointId: string;
  readonly at: number;
};

/**
 * A new signing secret (`secretId`); the one it replaces (`previousSecretId`) still signs until `previousValidUntil`
 * (24 hours on), so that a receiver may switch at its own pace: every delivery meanwhile carries both signatures.
 */
export type WebhookSecretRotated = {
  readonly type: 'WebhookSecretRotated';
  readonly endpointId: string;
  readonly secretId: string;
  readonly previousSecretId: string;
  readonly previousValidUntil: number;
  readonly at: number;
};

/** The endpoint failed every attempt for 3 days (`failingSince`): it gets no delivery until its account enables it. */
export type WebhookEndpointDisabled = {
  readonly type: 'WebhookEndpointDisabled';
  readonly endpointId: string;
  readonly failingSince: number;
  readonly at: number;
};

/** Turned back on by its account: new events are delivered again (missed ones by redelivery). */
export type WebhookEndpointEnabled = {
  readonly type: 'WebhookEndpointEnabled';
  readonly endpointId: string;
  readonly at: number;
};

/**
 * An event is due at an endpoint: written in the same commit as the request's or batch's ending that made it (the
 * outbox), so no crash can lose it. It holds what the body is made of (the body is the same on every attempt), and
 * when the delivery gives up if no attempt succeeds (`giveUpAt`, the retention after `at`).
 */
export type WebhookDeliveryDue = {
  readonly type: 'WebhookDeliveryDue';
  readonly deliveryId: string;
  readonly endpointId: string;
  readonly accountId: string;
  readonly eventId: string;
  readonly eventType: WebhookEventType;
  /** `data.id` of the body: the `resp_…`, `req_…` or `batch_…` the event is about. */
  readonly dataId: string;
  /** The time of the ending it is about (the body's `created_at`). */
  readonly createdAt: number;
  readonly giveUpAt: number;
  readonly at: number;
};

/**
 * A sender took the next attempt: `owner` (a process) holds it until `leaseUntil`; another takes it over only once
 * that lapsed. A single process may send without it (outcome events then name no owner), as a request's start may
 * be left out on one node.
 */
export type WebhookAttemptStarted = {
  readonly type: 'WebhookAttemptStarted';
  readonly deliveryId: string;
  readonly endpointId: string;
  readonly attempt: number;
  readonly owner: string;
  readonly leaseUntil: number;
  readonly at: number;
};

/** What one attempt saw, for the delivery log: the answer's status (absent: none came) and the time it took. */
export type AttemptOutcome = {
  readonly attempt: number;
  readonly owner?: string | undefined;
  readonly status?: number | undefined;
  readonly latencyMs?: number | undefined;
  /** Why it counts as failed, in words for the delivery log (never the secret, never the body). */
  readonly error?: string | undefined;
};

/** An attempt failed; the next is not made before `retryAt`. */
export type WebhookAttemptFailed = {
  readonly type: 'WebhookAttemptFailed';
  readonly deliveryId: string;
  readonly endpointId: string;
  readonly retryAt: number;
  readonly at: number;
} & AttemptOutcome;

/** An attempt was answered 2xx in time: delivered (until a redelivery makes it due again). */
export type WebhookDelivered = {
  readonly type: 'WebhookDelivered';
  readonly deliveryId: string;
  readonly endpointId: string;
  readonly at: number;
} & AttemptOutcome;

/** Why a delivery gave up: its retention passed, or its endpoint was disabled or removed. */
export type GiveUpReason = 'retention' | 'endpoint_disabled' | 'endpoint_removed';

/**
 * No more attempts: the last failed past the retention (its outcome is recorded here, `attempt` set), or none was
 * made once the endpoint was disabled or removed (`attempt` absent). Redelivery can make it due again.
 */
export type WebhookDeliveryGaveUp = {
  readonly type: 'WebhookDeliveryGaveUp';
  readonly deliveryId: string;
  readonly endpointId: string;
  readonly reason: GiveUpReason;
  readonly at: number;
} & Partial<AttemptOutcome>;

/** Its account asked for it again: due at once, with the same id, for a new retention (until `giveUpAt`). */
export type WebhookRedeliveryRequested = {
  readonly type: 'WebhookRedeliveryRequested';
  readonly deliveryId: string;
  readonly endpointId: string;
  readonly giveUpAt: number;
  readonly at: number;
};

/**
 * The first delivered attempt after a run of failures (since `failingSince`): the endpoint answers again (issue 42).
 * Written with that `WebhookDelivered`, in the same write; its deliveries that wait for a retry after failing in the
 * run become due at once (recovery.ts), instead of after a backoff grown to an hour.
 */
export type WebhookEndpointRecovered = {
  readonly type: 'WebhookEndpointRecovered';
  readonly endpointId: string;
  readonly failingSince: number;
  readonly at: number;
};

/** A delivery waiting for its retry was made due at once, since its endpoint recovered after it last failed
 * (recovery.ts). Written with the attempt's start; once per delivery until it is redelivered. */
export type WebhookDeliveryReleased = {
  readonly type: 'WebhookDeliveryReleased';
  readonly deliveryId: string;
  readonly endpointId: string;
  readonly at: number;
};

export type WebhookEndpointEvent =
  | WebhookEndpointAdded
  | WebhookEndpointRemoved
  | WebhookSecretRotated
  | WebhookEndpointDisabled
  | WebhookEndpointEnabled
  | WebhookEndpointRecovered;

export type WebhookDeliveryEvent =
  | WebhookDeliveryDue
  | WebhookAttemptStarted
  | WebhookAttemptFailed
  | WebhookDelivered
  | WebhookDeliveryGaveUp
  | WebhookRedeliveryRequested
  | WebhookDeliveryReleased;

export type WebhookEvent = WebhookEndpointEvent | WebhookDeliveryEvent;

/** Every webhook event's type starts with `Webhook` and no other event's does. */
export const isWebhookEvent = (event: { type: string }): event is WebhookEvent => event.type.startsWith('Webhook');

export const isWebhookDeliveryEvent = (event: WebhookEvent): event is WebhookDeliveryEvent => 'deliveryId' in event;

/** Does not compile if a webhook event's type lacks the prefix, or another event's type has it. */
export type WebhookEventNamesAreTellable = [WebhookEvent['type']] extends [`Webhook${string}`]
  ? [
      Extract<RequestEvent['type'] | AccountEvent['type'] | BatchEvent['type'] | FileEvent['type'], `Webhook${string}`>,
    ] extends [never]
    ? true
    : never
  : never;
const webhookEventNamesAreTellable: WebhookEventNamesAreTellable = true;
void webhookEventNamesAreTellable;
