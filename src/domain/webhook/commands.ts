import type { AccountState } from '../account/state.js';
import type { BatchEvent } from '../batch/events.js';
import { type BatchState, evolveBatch, initialBatchState } from '../batch/state.js';
import { DeliveryLifecycleViolation, Refused } from '../errors.js';
import type { DomainEvent } from '../events.js';
import type { PlanTable } from '../plans.js';
import type { RequestEvent } from '../request/events.js';
import type { RequestState } from '../request/state.js';
import { type DeliveryCommand, type DeliveryState, decideDelivery, initialDeliveryState } from './delivery.js';
import { batchWebhookEvents, dueDeliveries, requestWebhookEvents, type WebhookEventFacts } from './dueDeliveries.js';
import { countsTowardLimit, decideEndpoint, type WebhookEndpointState } from './endpoint.js';
import type { WebhookDeliveryDue, WebhookEvent } from './events.js';
import type { EventFilter } from './eventTypes.js';

/**
 * The commands of webhook endpoints and deliveries, as the app sends them to the store: what the write must find
 * (the account, its endpoints, the endpoint a delivery goes to) is read inside the write, not sent along.
 */
export type EndpointAsk =
  | {
      readonly type: 'AddEndpoint';
      readonly accountId: string;
      readonly url: string;
      readonly events: EventFilter;
      readonly secretId: string;
      /** The signing secret (`whsec_…`), kept among the store's credentials under `secretId`, never in the log. */
      readonly secret: string;
      readonly plans: PlanTable;
      readonly allowHttp: boolean;
      readonly now: number;
    }
  | { readonly type: 'RemoveEndpoint'; readonly accountId: string; readonly now: number }
  | {
      readonly type: 'RotateSecret';
      readonly accountId: string;
      readonly secretId: string;
      readonly secret: string;
      readonly now: number;
    }
  | { readonly type: 'EnableEndpoint'; readonly accountId: string; readonly now: number };

type WithoutEndpoint<C> = C extends unknown ? Omit<C, 'endpoint'> : never;

/** A delivery command without the endpoint (read inside the write). Making a delivery due is no command: it goes with
 * the ending that makes it (`webhookDeliveriesFor`). */
export type DeliveryAsk = WithoutEndpoint<Exclude<DeliveryCommand, { type: 'MakeDue' }>>;

export type WebhookCommand =
  | { readonly type: 'WebhookEndpoint'; readonly endpointId: string; readonly command: EndpointAsk }
  | { readonly type: 'WebhookDelivery'; readonly deliveryId: string; readonly command: DeliveryAsk };

/** Where an endpoint's signing secret is kept among the store's credentials. */
export const webhookSecretCredentialKey = (secretId: string) => `webhookSecret:${secretId}`;

/** What deciding a webhook command, or the webhooks an ending makes due, reads inside the write. */
export interface WebhookReads {
  account(accountId: string): AccountState | undefined;
  webhookEndpoint(endpointId: string): WebhookEndpointState | undefined;
  /** An account's endpoints that are not removed, oldest first (at most its plan's bound: 50). */
  webhookEndpointsOf(accountId: string): readonly WebhookEndpointState[];
  webhookDelivery(deliveryId: string): DeliveryState | undefined;
  /** How long a delivery is attempted before it gives up (`webhooks.retentionHours`). */
  webhookRetentionMs(): number;
  request(reqId: string): RequestState | undefined;
  batch(batchId: string): { readonly state: BatchState } | undefined;
}

type Credential = { readonly key: string; readonly value: string | undefined };

export type WebhookDecision = {
  readonly events: readonly WebhookEvent[];
  readonly credentials?: readonly Credential[];
};

const decideEndpointAsk = (
  reads: WebhookReads,
  endpointId: string,
  ask: EndpointAsk,
): WebhookDecision | ReturnType<typeof decideEndpoint> => {
  const state = reads.webhookEndpoint(endpointId);
  if (ask.type === 'AddEndpoint') {
    const { secret: _secret, accountId, ...rest } = ask;
    const endpointsOfAccount = reads.webhookEndpointsOf(accountId).filter(countsTowardLimit).length;
    const events = decideEndpoint(endpointId, state, {
      ...rest,
      endpointId,
      account: reads.account(accountId),
      endpointsOfAccount,
    });
    if (!Array.isArray(events)) return events;
    return { events, credentials: [{ key: webhookSecretCredentialKey(ask.secretId), value: ask.secret }] };
  }
  if (ask.type === 'RotateSecret') {
    const { secret: _secret, ...command } = ask;
    const events = decideEndpoint(endpointId, state, command);
    if (!Array.isArray(events)) return events;
    const credentials: Credential[] = [{ key: webhookSecretCredentialKey(ask.secretId), value: ask.secret }];
    // The secret that stops signing now (the one a rotation within the last 24 hours replaced) is forgotten.
    const dropped = state?.previousSecret?.secretId;
    if (dropped !== undefined) credentials.push({ key: webhookSecretCredentialKey(dropped), value: undefined });
    return { events, credentials };
  }
  const events = decideEndpoint(endpointId, state, ask);
  if (!Array.isArray(events)) return events;
  if (ask.type !== 'RemoveEndpoint' || events.length === 0 || state === undefined) return { events };
  // A removed endpoint signs nothing again: its secrets go with it.
  const secrets = [state.secretId, state.previousSecret?.secretId].filter((id): id is string => id !== undefined);
  return { events, credentials: secrets.map((id) => ({ key: webhookSecretCredentialKey(id), value: undefined })) };
};

const decideDeliveryAsk = (
  reads: WebhookReads,
  deliveryId: string,
  ask: DeliveryAsk,
): WebhookDecision | Refused | DeliveryLifecycleViolation => {
  const state = reads.webhookDelivery(deliveryId);
  if (state === undefined) return new Refused({ message: `no webhook delivery ${deliveryId}` });
  const endpoint = reads.webhookEndpoint(state.context.endpointId);
  const decided = decideDelivery(state, { ...ask, endpoint } as DeliveryCommand);
  if (decided instanceof Refused || decided instanceof DeliveryLifecycleViolation) return decided;
  return { events: decided };
};

/** Decides a webhook command inside the write. */
export const decideWebhookCommand = (
  reads: WebhookReads,
  command: WebhookCommand,
):
  | WebhookDecision
  | Refused
  | DeliveryLifecycleViolation
  | Exclude<ReturnType<typeof decideEndpoint>, readonly unknown[]> =>
  command.type === 'WebhookEndpoint'
    ? (decideEndpointAsk(reads, command.endpointId, command.command) as WebhookDecision)
    : decideDeliveryAsk(reads, command.deliveryId, command.command);

const endings = new Set<string>(['RequestCompleted', 'RequestFailed', 'RequestCancelled', 'RequestExpired']);

/** The webhook events a decision's events make: a request's or a batch's ending, as the write found it before. */
const webhookEventsOf = (reads: WebhookReads, events: readonly DomainEvent[]): WebhookEventFacts[] => {
  const made: WebhookEventFacts[] = [];
  let batches: Map<string, BatchState> | undefined;
  for (const event of events) {
    if (endings.has(event.type)) {
      const ending = event as RequestEvent;
      // The request as the write found it: the store applies a decision's requests only after deciding.
      const before = reads.request(ending.reqId);
      if (before === undefined) continue;
      const { accountId, batchId, face } = before.context;
      made.push(...requestWebhookEvents(before.status, ending, { reqId: ending.reqId, accountId, batchId, face }));
    } else if (event.type.startsWith('Batch')) {
      // A batch's events are folded in order from the batch as the write found it: its end may follow others.
      const batchEvent = event as BatchEvent;
      batches ??= new Map();
      const before = batches.get(batchEvent.batchId) ?? reads.batch(batchEvent.batchId)?.state ?? initialBatchState;
      const after = evolveBatch(before, batchEvent);
      batches.set(batchEvent.batchId, after);
      made.push(...batchWebhookEvents(batchEvent, after));
    }
  }
  return made;
};

/**
 * The outbox: the deliveries a decision's events make due, to be appended to the same decision (so committed in the
 * same write as the ending that makes them). None for an account without endpoints; one read of its endpoints
 * otherwise. A delivery the log already holds (the same source event decided twice) is not made again.
 */
export const webhookDeliveriesFor = (
  reads: WebhookReads,
  events: readonly DomainEvent[],
): readonly WebhookDeliveryDue[] => {
  const made = webhookEventsOf(reads, events);
  if (made.length === 0) return [];
  const accounts = new Set(made.map((event) => event.accountId));
  const endpoints = [...accounts].flatMap((accountId) => reads.webhookEndpointsOf(accountId));
  if (endpoints.length === 0) return [];
  return dueDeliveries(made, endpoints, reads.webhookRetentionMs()).filter(
    (due) => (reads.webhookDelivery(due.deliveryId) ?? initialDeliveryState).status === 'none',
  );
};
