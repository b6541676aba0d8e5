import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newWebhookSecret, signWebhook } from '../../src/app/webhooks/signing.js';
import { type BatchState, initialBatchState } from '../../src/domain/batch/state.js';
import {
  batchWebhookEvents,
  dueDeliveries,
  envelopeEventOf,
  requestWebhookEvents,
  type WebhookEventFacts,
} from '../../src/domain/webhook/dueDeliveries.js';
import { webhookBody } from '../../src/domain/webhook/envelope.js';
import type { WebhookDeliveryDue } from '../../src/domain/webhook/events.js';
import { webhookEventTypes } from '../../src/domain/webhook/eventTypes.js';
import { accountId, enabledEndpoint, hour, reqId } from '../support/webhookDomain.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhookReceiver.js';

const batchId = 'batch_0190f2a0b1c2AbCdEfGhIjKlMnOpQrStUv';
const now = Date.now();

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
  const body = webhookBody(envelopeEventOf(due));
  const headers = signWebhook({ id: due.deliveryId, timestampMs: options.timestamp ?? Date.now(), body, secrets });
  const answer = await fetch(url, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: options.tamper?.(body) ?? body,
  });
  return answer.status;
};

/** What the official SDK makes of what the receiver got, with `secret`: the event, or the SDK's refusal. */
const client = new OpenAI({ apiKey: 'unused-by-webhooks' });
const unwrap = async (received: WebhookReceiver['received'][number], secret: string) => {
  try {
    return {
      event: (await client.webhooks.unwrap(received.body, received.headers as Record<string, string>, secret)) as {
        id: string;
        type: string;
        data: { id: string };
      },
    };
  } catch (error) {
    return { refused: (error as Error).message };
  }
};

describe("Webhook deliveries of every ending, signed per Standard Webhooks, as the openai SDK's webhooks.unwrap() verifies them", () => {
  const secret = newWebhookSecret();
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    receiver = await startWebhookReceiver();
  });
  afterAll(async () => {
    await receiver.close();
  });
  const dues = () => dueDeliveries(everyEvent(), [enabledEndpoint()], 72 * hour);

  it('accepts a delivery of every event type, with the envelope, the webhook-id and the data.id it was sent', async () => {
    expect(new Set(dues().map((due) => due.eventType))).toEqual(new Set(webhookEventTypes));
    receiver.received.length = 0;
    for (const due of dues()) expect(await send(receiver.url('/ok'), due, [secret])).toBe(200);
    const unwrapped = await Promise.all(receiver.received.map((r) => unwrap(r, secret)));
    expect(unwrapped.map((u) => [u.event?.id, u.event?.type, u.event?.data.id, u.refused])).toEqual(
      dues().map((due) => [due.eventId, due.eventType, due.dataId, undefined]),
    );
    expect(receiver.received.map((r) => r.headers['webhook-id'])).toEqual(dues().map((due) => due.deliveryId));
  });

  it('is refused by the SDK when the body was changed on the way, or its timestamp is older than 5 minutes', async () => {
    const [due] = dues();
    receiver.received.length = 0;
    await send(receiver.url('/ok'), due!, [secret], {
      tamper: (body) => body.replace('"object":"event"', '"object":"evil"'),
    });
    await send(receiver.url('/ok'), due!, [secret], { timestamp: Date.now() - 600_000 });
    const [tampered, old] = await Promise.all(receiver.received.map((r) => unwrap(r, secret)));
    expect(tampered?.refused).toMatch(/signature does not match/);
    expect(old?.refused).toMatch(/too old/);
  });

  it('during a rotation carries both signatures: the old secret and the new both verify it, another does not', async () => {
    const [due] = dues();
    const rotated = newWebhookSecret();
    receiver.received.length = 0;
    await send(receiver.url('/ok'), due!, [rotated, secret]);
    const [received] = receiver.received;
    expect(received?.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/=]+ v1,[A-Za-z0-9+/=]+$/);
    expect((await unwrap(received!, secret)).refused).toBeUndefined();
    expect((await unwrap(received!, rotated)).refused).toBeUndefined();
    expect((await unwrap(received!, newWebhookSecret())).refused).toMatch(/signature does not match/);
  });
});
