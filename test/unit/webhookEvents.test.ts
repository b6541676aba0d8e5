import { describe, expect, it } from 'vitest';
import type { BatchEvent } from '../../src/domain/batch/events.js';
import { type BatchState, initialBatchState } from '../../src/domain/batch/state.js';
import { couldBeId } from '../../src/domain/identifiers.js';
import type { RequestStatus } from '../../src/domain/request/state.js';
import {
  batchWebhookEvents,
  dueDeliveries,
  envelopeEventOf,
  requestWebhookEvents,
} from '../../src/domain/webhook/dueDeliveries.js';
import type { WebhookEndpointState } from '../../src/domain/webhook/endpoint.js';
import { webhookBody } from '../../src/domain/webhook/envelope.js';
import { webhookEventId, webhookEventTypes } from '../../src/domain/webhook/eventTypes.js';
import { accountId, enabledEndpoint, endpointIds, hour, reqId, t0 } from '../support/webhookDomain.js';

const batchId = 'batch_0190f2a0b1c2AbCdEfGhIjKlMnOpQrStUv';
const completed = { type: 'RequestCompleted', reqId, responseChars: 5, at: t0 } as const;

const typesOf = (before: RequestStatus, event: Parameters<typeof requestWebhookEvents>[1], face?: 'responses') =>
  requestWebhookEvents(before, event, { reqId, accountId, face }).map((e) => e.type);

describe('The webhook events an ending makes', () => {
  it('makes request.completed, failed, cancelled for a request that ends so', () => {
    expect(typesOf('processing', completed)).toEqual(['request.completed']);
    expect(typesOf('processing', { type: 'RequestFailed', reqId, reason: 'x', at: t0 })).toEqual(['request.failed']);
    expect(typesOf('waiting', { type: 'RequestCancelled', reqId, at: t0 })).toEqual(['request.cancelled']);
  });
  it('makes request.expired only for a request that expires unfinished, not for the retention of an ended one', () => {
    const expired = { type: 'RequestExpired', reqId, at: t0 } as const;
    expect(typesOf('waiting', expired)).toEqual(['request.expired']);
    expect(typesOf('processing', expired)).toEqual(['request.expired']);
    for (const ended of ['completed', 'failed', 'cancelled'] as const) expect(typesOf(ended, expired)).toEqual([]);
  });
  it('makes response.* too, with data.id the resp_ id, for a request made through the Responses face', () => {
    const events = requestWebhookEvents('processing', completed, { reqId, accountId, face: 'responses' });
    expect(events.map((e) => [e.type, e.dataId])).toEqual([
      ['response.completed', `resp_${reqId.slice(4)}`],
      ['request.completed', reqId],
    ]);
  });
  it("makes none for a batch's line (the batch's ending is the event) nor for events that end nothing", () => {
    expect(requestWebhookEvents('processing', completed, { reqId, accountId, batchId })).toEqual([]);
    expect(typesOf('waiting', { type: 'RequestProcessingStarted', reqId, attempt: 1, at: t0 })).toEqual([]);
  });
  it('makes batch.completed, expired, cancelled when a batch ends so, and batch.failed when its file is refused', () => {
    const batch = (status: BatchState['status']): BatchState => ({
      status,
      context: { ...initialBatchState.context, batchId, accountId },
    });
    const ended: BatchEvent = { type: 'BatchEnded', batchId, owner: 'p', completed: 1, failed: 0, at: t0 };
    for (const status of ['completed', 'expired', 'cancelled'] as const)
      expect(batchWebhookEvents(ended, batch(status)).map((e) => [e.type, e.dataId])).toEqual([
        [`batch.${status}`, batchId],
      ]);
    const refused: BatchEvent = { type: 'BatchValidationFailed', batchId, owner: 'p', errors: '[]', at: t0 };
    expect(batchWebhookEvents(refused, batch('failed')).map((e) => e.type)).toEqual(['batch.failed']);
    expect(batchWebhookEvents({ type: 'BatchCancelRequested', batchId, at: t0 }, batch('cancelling'))).toEqual([]);
  });
});

describe('Event and delivery ids', () => {
  it('are of their forms, and the same source event always gives the same ids', () => {
    const [first] = requestWebhookEvents('processing', completed, { reqId, accountId });
    const [again] = requestWebhookEvents('processing', { ...completed, at: t0 + 5 }, { reqId, accountId });
    expect(first?.eventId).toBe(again?.eventId);
    expect(couldBeId('webhookEvent', first?.eventId ?? '')).toBe(true);
    const [due] = dueDeliveries([first!], [enabledEndpoint()], 72 * hour);
    expect(couldBeId('webhookDelivery', due?.deliveryId ?? '')).toBe(true);
    expect(couldBeId('webhookEvent', webhookEventId('req_AbCdEfGhIjKlMnOpQrStUv', 'request.expired'))).toBe(true);
  });
  it('differ for every type of the same source, and for every source', () => {
    const requests = [reqId, 'req_0190f2a0b1c3AbCdEfGhIjKlMnOpQrStUv', 'req_AbCdEfGhIjKlMnOpQrStUv'];
    const batches = [batchId, 'batch_AbCdEfGhIjKlMnOpQrStUv'];
    const ids = webhookEventTypes.flatMap((type) =>
      (type.startsWith('batch.') ? batches : requests).map((source) => webhookEventId(source, type)),
    );
    expect(ids).toHaveLength(3 * 7 + 2 * 4);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('The deliveries an event makes due', () => {
  const events = requestWebhookEvents('processing', completed, { reqId, accountId, face: 'responses' });
  const endpoint = (id: string, filter: string[] = [], change: Partial<WebhookEndpointState> = {}) => ({
    ...enabledEndpoint(id, filter),
    ...change,
  });

  it('makes one per event and per enabled endpoint of the account whose filter takes the type', () => {
    const due = dueDeliveries(
      events,
      [
        endpoint(endpointIds[0]),
        endpoint(endpointIds[1], ['response.completed']),
        endpoint(endpointIds[2], ['batch.failed']),
      ],
      72 * hour,
    );
    expect(due.map((d) => [d.endpointId, d.eventType])).toEqual([
      [endpointIds[0], 'response.completed'],
      [endpointIds[1], 'response.completed'],
      [endpointIds[0], 'request.completed'],
    ]);
    expect(due[0]).toMatchObject({ accountId, createdAt: t0, at: t0, giveUpAt: t0 + 72 * hour });
  });
  it("makes none for a removed or disabled endpoint, nor for another account's", () => {
    const due = dueDeliveries(
      events,
      [
        endpoint(endpointIds[0], [], { status: 'removed' }),
        endpoint(endpointIds[1], [], { status: 'disabled' }),
        endpoint(endpointIds[2], [], { accountId: 'acct_ZZZZZZZZZZZZZZZZ' }),
      ],
      72 * hour,
    );
    expect(due).toEqual([]);
  });
  it("has a body in OpenAI's envelope, the same for every attempt", () => {
    const [due] = dueDeliveries(events, [endpoint(endpointIds[0])], 72 * hour);
    expect(JSON.parse(webhookBody(envelopeEventOf(due!)))).toEqual({
      id: due?.eventId,
      object: 'event',
      created_at: Math.floor(t0 / 1000),
      type: 'response.completed',
      data: { id: `resp_${reqId.slice(4)}` },
    });
  });
});
