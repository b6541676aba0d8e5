import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { newWebhookSecret, signWebhook, webhookSecretProblem } from '../../src/app/webhooks/signing.js';
import { couldBeId } from '../../src/domain/identifiers.js';
import { webhookBody } from '../../src/domain/webhook/envelope.js';
import { webhookEventId } from '../../src/domain/webhook/eventTypes.js';

// Issue 30: every delivery is signed per Standard Webhooks, and the official `openai` SDK's `webhooks.unwrap()`
// accepts it; a changed body or an old timestamp is refused by the SDK.

const sdk = (webhookSecret: string) => new OpenAI({ apiKey: 'x', webhookSecret }).webhooks;

const delivery = (secrets: string[], timestampMs = Date.now()) => {
  const id = webhookEventId(`req_${randomBytes(26).toString('base64url').slice(0, 34)}`, 'response.completed');
  const body = webhookBody({
    id,
    type: 'response.completed',
    createdAtMs: timestampMs,
    data: { id: 'resp_abcdefghijklmnopqrstuv' },
  });
  return { id, body, headers: signWebhook({ id, timestampMs, body, secrets }) };
};

describe('Standard Webhooks signatures', () => {
  it('a new secret is whsec_ and the base64 of 32 random bytes, different each time', () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    expect(webhookSecretProblem(secret)).toBeUndefined();
    expect(newWebhookSecret()).not.toBe(secret);
  });

  it('a delivery signed with its secret is accepted by the openai SDK, which gives back the event', async () => {
    const secret = newWebhookSecret();
    const { id, body, headers } = delivery([secret]);
    expect(headers['webhook-id']).toBe(id);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    const event = await sdk(secret).unwrap(body, headers);
    expect(event).toMatchObject({ id, object: 'event', type: 'response.completed' });
    expect(event.data).toEqual({ id: 'resp_abcdefghijklmnopqrstuv' });
    expect(couldBeId('webhookEvent', id)).toBe(true);
  });

  it('gives the signature of the Standard Webhooks example (a 24-byte secret made elsewhere)', () => {
    const headers = signWebhook({
      id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      timestampMs: 1_614_265_330_000,
      body: '{"test": 2432232314}',
      secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
    });
    expect(headers).toEqual({
      'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      'webhook-timestamp': '1614265330',
      'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    });
  });

  it('a body changed after signing is refused by the SDK', async () => {
    const secret = newWebhookSecret();
    const { body, headers } = delivery([secret]);
    const tampered = body.replace('response.completed', 'response.failed');
    expect(tampered).not.toBe(body);
    await expect(sdk(secret).unwrap(tampered, headers)).rejects.toThrow(OpenAI.InvalidWebhookSignatureError);
  });

  it('a delivery signed with another secret is refused by the SDK', async () => {
    const { body, headers } = delivery([newWebhookSecret()]);
    await expect(sdk(newWebhookSecret()).unwrap(body, headers)).rejects.toThrow(/does not match/);
  });

  it('a delivery with a timestamp older than the SDK allows (5 minutes) is refused, even well signed', async () => {
    const secret = newWebhookSecret();
    const { body, headers } = delivery([secret], Date.now() - 10 * 60_000);
    await expect(sdk(secret).unwrap(body, headers)).rejects.toThrow(/too old/);
  });

  it('during a rotation a delivery carries two signatures, and a receiver knowing either secret accepts it', async () => {
    const [old, fresh] = [newWebhookSecret(), newWebhookSecret()];
    const { id, body, headers } = delivery([old, fresh]);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect((await sdk(old).unwrap(body, headers)).id).toBe(id);
    expect((await sdk(fresh).unwrap(body, headers)).id).toBe(id);
    await expect(sdk(newWebhookSecret()).unwrap(body, headers)).rejects.toThrow(OpenAI.InvalidWebhookSignatureError);
  });

  it('the envelope is OpenAI’s: id, object "event", created_at in whole seconds, type and data', () => {
    const body = webhookBody({
      id: 'evt_abcdefghijklmnopqrstuv',
      type: 'request.completed',
      createdAtMs: 1_800_000_000_999,
      data: { id: 'req_abcdefghijklmnopqrstuv' },
    });
    expect(body).toBe(
      '{"id":"evt_abcdefghijklmnopqrstuv","object":"event","created_at":1800000000,"type":"request.completed","data":{"id":"req_abcdefghijklmnopqrstuv"}}',
    );
  });

  it.each([
    ['no prefix', 'c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0'],
    ['too short a key', 'whsec_c2hvcnQ='],
    ['not base64', `whsec_${'!'.repeat(44)}`],
    ['far too long', `whsec_${'A'.repeat(10_000)}`],
  ])('a secret with %s is refused, and cannot sign', (_, secret) => {
    expect(webhookSecretProblem(secret)).toBeDefined();
    expect(webhookSecretProblem(secret)).not.toContain(secret.slice(6, 20) || 'never');
    expect(() => signWebhook({ id: 'evt_x', timestampMs: 0, body: '{}', secrets: [secret] })).toThrow();
  });
});
