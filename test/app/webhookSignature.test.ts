import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newWebhookSecret, webhookHeaders } from '../../src/app/webhooks/signature.js';
import { type BatchState, initialBatchState } from '../../src/domain/batch/state.js';
import {
  batchWebhookEvents,
  dueDeliveries,
  requestWebhookEvents,
  type WebhookEventFacts,
} from '../../src/domain/webhook/dueDeliveries.js';
import { webhookBody } from '../../src/domain/webhook/envelope.js';
import type { WebhookDeliveryDue } from '../../src/domain/webhook/events.js';
import { webhookEventTypes } from '../../src/domain/webhook/eventTypes.js';
import { accountId, enabledEndpoint, hour, reqId } from '../support/webhookDomain.js';
import { startWebhookReceiver } from '../support/webhookReceiver.js';

const batchId = 'batch_0190f2a0b1c2AbCdEfGhIjKlMnOpQrStUv';
const now = Date.now();
const secondsNow = () => Math.floor(Date.now() / 1000);

/** One event of every type, as the endings of a Responses request, a `/v1/ai` request and a batch make them. */
const everyEvent = (): WebhookEventFacts[] => {
  const request = (ending: 'RequestCompleted' | 'RequestFailed' | 'RequestCancelled' | 'RequestExpired') =>
    requestWebhookEvents(
      'processing',
      ending === 'RequestCompleted'
        ? { type: ending, reqId, responseChars: 1, at: now }
        : ending === 'RequestFailed'
          ? { type: ending, reqId, reason: 'x', at: now }
          : { type: ending, reqId, at: now },
      { reqId, accountId, face: 'responses' },
    );
  const batch = (status: BatchState['status'], type: 'BatchEnded' | 'BatchValidationFailed') =>
    batchWebhookEvents(
      type === 'BatchEnded'
        ? { type, batchId, owner: 'p', completed: 1, failed: 0, at: now }
        : { type, batchId, owner: 'p', errors: '[]', at: now },
      { status, context: { ...initialBatchState.context, batchId, accountId } },
    );
  return [
    ...request('RequestCompleted'),
    ...request('RequestFailed'),
    ...request('RequestCancelled'),
    ...request('RequestExpired'),
    ...batch('completed', 'BatchEnded'),
    ...batch('failed', 'BatchValidationFailed'),
    ...batch('expired', 'BatchEnded'),
    ...batch('cancelled', 'BatchEnded'),
  ];
};

/** Sends one attempt of `due` to `url` as the sender will: its body, signed by `secrets`, at `timestamp`. */
const send = async (
  url: string,
  due: WebhookDeliveryDue,
  secrets: readonly string[],
  options: { timestamp?: number; tamper?: (body: string) => string } = {},
) => {
  const body = webhookBody(due);
  const headers = webhookHeaders(due.deliveryId, options.timestamp ?? secondsNow(), body, secrets);
  const answer = await fetch(url, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: options.tamper?.(body) ?? body,
  });
  return answer.status;
};

describe("Webhook deliveries, signed per Standard Webhooks, to a receiver that verifies them with the openai SDK's webhooks.unwrap()", () => {
  let secret = newWebhookSecret();
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  beforeAll(async () => {
    receiver = await startWebhookReceiver(() => secret);
  });
  afterAll(async () => {
    await receiver.close();
  });

  it('accepts a delivery of every event type, with the envelope, the webhook-id and the data.id it was sent', async () => {
    const dues = dueDeliveries(everyEvent(), [enabledEndpoint()], 72 * hour);
    expect(new Set(dues.map((due) => due.eventType))).toEqual(new Set(webhookEventTypes));
    receiver.received.length = 0;
    for (const due of dues) expect(await send(receiver.url, due, [secret])).toBe(200);
    expect(receiver.received.map((r) => r.refused)).toEqual(dues.map(() => undefined));
    expect(
      receiver.received.map((r) => [r.headers['webhook-id'], r.verified?.id, r.verified?.type, r.verified?.data.id]),
    ).toEqual(dues.map((due) => [due.deliveryId, due.eventId, due.eventType, due.dataId]));
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  });

  it('is refused by the SDK when the body was changed on the way', async () => {
    const [due] = dueDeliveries(everyEvent(), [enabledEndpoint()], 72 * hour);
    receiver.received.length = 0;
    const status = await send(receiver.url, due!, [secret], {
      tamper: (body) => body.replace('"object":"event"', '"object":"evil"'),
    });
    expect(status).toBe(400);
    expect(receiver.received[0]?.refused).toMatch(/signature does not match/);
  });

  it('is refused by the SDK when its timestamp is older than the SDK tolerates (5 minutes)', async () => {
    const [due] = dueDeliveries(everyEvent(), [enabledEndpoint()], 72 * hour);
    receiver.received.length = 0;
    expect(await send(receiver.url, due!, [secret], { timestamp: secondsNow() - 600 })).toBe(400);
    expect(receiver.received[0]?.refused).toMatch(/too old/);
  });

  it('during a rotation carries both signatures: a receiver with the old secret and one with the new both accept, another secret does not', async () => {
    const [due] = dueDeliveries(everyEvent(), [enabledEndpoint()], 72 * hour);
    const previous = secret;
    const rotated = newWebhookSecret();
    receiver.received.length = 0;
    expect(await send(receiver.url, due!, [rotated, previous])).toBe(200);
    secret = rotated;
    expect(await send(receiver.url, due!, [rotated, previous])).toBe(200);
    secret = newWebhookSecret();
    expect(await send(receiver.url, due!, [rotated, previous])).toBe(400);
    expect(receiver.received.map((r) => r.refused === undefined)).toEqual([true, true, false]);
    expect(receiver.received[0]?.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/=]+ v1,[A-Za-z0-9+/=]+$/);
  });
});
