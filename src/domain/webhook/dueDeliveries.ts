import type { BatchEvent } from '../batch/events.js';
import type { BatchState } from '../batch/state.js';
import type { RequestEvent } from '../request/events.js';
import type { RequestStatus } from '../request/state.js';
import { receivesDeliveries, type WebhookEndpointState } from './endpoint.js';
import type { WebhookEvent as EnvelopeEvent } from './envelope.js';
import type { WebhookDeliveryDue } from './events.js';
import { filterMatches, type WebhookEventType, webhookDeliveryId, webhookEventId } from './eventTypes.js';

/** A webhook event an ending makes: its id, type, what `data.id` names, whose it is and when it happened. */
export type WebhookEventFacts = {
  readonly eventId: string;
  readonly type: WebhookEventType;
  readonly accountId: string;
  readonly dataId: string;
  readonly createdAt: number;
};

/**
 * What the request an event is about is, as the write finds it: its account, its batch (a line of one), and the face
 * it came in by. `face: 'responses'`: it was made by `POST /v1/responses`. No event records that yet (a Responses
 * request and a chat completion both store `input: 'chat'`): the wiring adds it to `RequestQueued`
 * (docs/decisions.md, "A request's face").
 */
export type RequestFacts = {
  readonly reqId: string;
  readonly accountId: string;
  readonly batchId?: string | undefined;
  readonly face?: 'responses' | undefined;
};

const facts = (sourceId: string, type: WebhookEventType, accountId: string, dataId: string, at: number) => ({
  eventId: webhookEventId(sourceId, type),
  type,
  accountId,
  dataId,
  createdAt: at,
});

const requestEnding = {
  RequestCompleted: 'completed',
  RequestFailed: 'failed',
  RequestCancelled: 'cancelled',
} as const;

/**
 * The webhook events a request's event makes, given its status before it: `request.completed|failed|cancelled`
 * when it ends so, and `request.expired` when it expires unfinished (waiting or processing). The expiry of a request
 * that had already ended is its retention, no event. A Responses request also makes `response.completed|failed|
 * cancelled`, `data.id` its `resp_…` id. A batch's lines make none: their batch's ending is the event (a batch of
 * 50,000 lines is one `batch.completed`, not 50,000 posts).
 */
export const requestWebhookEvents = (
  before: RequestStatus,
  event: RequestEvent,
  request: RequestFacts,
): readonly WebhookEventFacts[] => {
  if (request.batchId !== undefined) return [];
  const { reqId, accountId } = request;
  if (event.type === 'RequestExpired')
    return before === 'waiting' || before === 'processing'
      ? [facts(reqId, 'request.expired', accountId, reqId, event.at)]
      : [];
  if (event.type !== 'RequestCompleted' && event.type !== 'RequestFailed' && event.type !== 'RequestCancelled')
    return [];
  if (before !== 'waiting' && before !== 'processing') return [];
  const ending = requestEnding[event.type];
  const made = [facts(reqId, `request.${ending}`, accountId, reqId, event.at)];
  if (request.face === 'responses')
    made.unshift(facts(reqId, `response.${ending}`, accountId, `resp_${reqId.slice('req_'.length)}`, event.at));
  return made;
};

/** The batch events that may end a batch: its file refused, its files written, its housekeeping failed, the operator. */
const batchEndings: ReadonlySet<BatchEvent['type']> = new Set([
  'BatchValidationFailed',
  'BatchEnded',
  'BatchWorkFailed',
  'BatchFinalizingCancelled',
]);

/**
 * The webhook event a batch's event makes, given the batch's state after it: `batch.completed|failed|expired|
 * cancelled` when it ends so (its file refused, its files written, its housekeeping failed for good, or cancelled by
 * the operator while finalizing).
 */
export const batchWebhookEvents = (event: BatchEvent, after: BatchState): readonly WebhookEventFacts[] => {
  const { batchId, accountId } = after.context;
  if (!batchEndings.has(event.type)) return [];
  const status = after.status;
  if (status !== 'completed' && status !== 'failed' && status !== 'expired' && status !== 'cancelled') return [];
  return [facts(batchId, `batch.${status}`, accountId, batchId, event.at)];
};

/**
 * The deliveries due for webhook events: one per event and per endpoint of the event's account that is enabled and
 * whose filter takes the event's type. Disabled and removed endpoints get none. Written in the same commit as the
 * ending that made the events (the outbox); each gives up `retentionMs` after.
 */
export const dueDeliveries = (
  events: readonly WebhookEventFacts[],
  endpoints: readonly WebhookEndpointState[],
  retentionMs: number,
): readonly WebhookDeliveryDue[] =>
  events.flatMap((event) =>
    endpoints
      .filter(
        (endpoint) =>
          endpoint.accountId === event.accountId &&
          receivesDeliveries(endpoint) &&
          filterMatches(endpoint.events, event.type),
      )
      .map((endpoint) => ({
        type: 'WebhookDeliveryDue' as const,
        deliveryId: webhookDeliveryId(event.eventId, endpoint.endpointId),
        endpointId: endpoint.endpointId,
        accountId: event.accountId,
        eventId: event.eventId,
        eventType: event.type,
        dataId: event.dataId,
        createdAt: event.createdAt,
        giveUpAt: event.createdAt + retentionMs,
        at: event.createdAt,
      })),
  );

/** The event a delivery sends, as envelope.ts makes its body from: the same facts, so every attempt sends the same
 * bytes and no body is stored. */
export const envelopeEventOf = (delivery: {
  readonly eventId: string;
  readonly eventType: WebhookEventType;
  readonly dataId: string;
  readonly createdAt: number;
}): EnvelopeEvent => ({
  id: delivery.eventId,
  type: delivery.eventType,
  createdAtMs: delivery.createdAt,
  data: { id: delivery.dataId },
});
