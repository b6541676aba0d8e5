import { Effect } from 'effect';
import { describe, expect, it } from 'vitest';
import {
  type Client,
  expectError,
  expectRateLimitHeaders,
  poll,
  submit,
  type Transport,
  useContractApp,
} from '../support/contract.js';

const valid = { model: 'echo', prompt: 'hello' };
const badBody = '{"model": "echo", "prompt": ';
const oversized = JSON.stringify({ model: 'echo', prompt: 'x'.repeat(2_000) });

/** Spends `count` calls of a budget with answers that are cheap to produce (400s spend the budget too). */
const spend = async (client: Client, key: string, budget: 'submits' | 'polls', count: number) => {
  for (let i = 0; i < count; i++) {
    const answer =
      budget === 'submits'
        ? await client.call('POST', '/v1/ai', { key, body: badBody })
        : await client.call('GET', '/v1/ai', { key });
    expect(answer.status).toBe(400);
  }
};

/** Rate limits (contract section 5) and the order of checks (section 2). */
export const limitsSuite = (transport: Transport) =>
  describe('rate limits and the order of checks', () => {
    const env = useContractApp(transport);

    it('puts the submits policy and what is left of it on every submit answer', async () => {
      const { key } = await env.app.account();
      const first = await env.client.call('POST', '/v1/ai', { key, body: valid });
      expect(first.headers.get('ratelimit-policy')).toBe('"submits";q=60;w=60');
      expect(first.headers.get('ratelimit')).toBe('"submits";r=59;t=1');
      const second = await env.client.call('POST', '/v1/ai', { key, body: { model: 'nope', prompt: 'x' } });
      expect(second.status).toBe(400);
      expect(second.headers.get('ratelimit')).toBe('"submits";r=58;t=2');
    });

    it('puts the polls policy and what is left of it on every poll answer', async () => {
      const { key } = await env.app.account();
      const reqId = await submit(env.client, key);
      const first = await poll(env.client, key, reqId);
      expect(first.headers.get('ratelimit-policy')).toBe('"polls";q=600;w=60');
      expect(first.headers.get('ratelimit')).toBe('"polls";r=599;t=1');
      const missing = await poll(env.client, key, 'req_unknown');
      expect(missing.status).toBe(404);
      expect(expectRateLimitHeaders(missing, 'polls', 600).remaining).toBe(598);
    });

    it("refuses a free account's 61st submit within a minute with 429, and grants it after Retry-After", async () => {
      const { key } = await env.app.account();
      await Promise.all(Array.from({ length: 60 }, () => submit(env.client, key)));
      const refused = await env.client.call('POST', '/v1/ai', { key, body: valid });
      const error = expectError(refused, 429, 'rate_limited');
      expect(error.details?.budget).toBe('submits');
      const retryAfter = refused.headers.get('retry-after') ?? '';
      expect(retryAfter).toMatch(/^\d+$/);
      expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
      expect(expectRateLimitHeaders(refused, 'submits', 60).remaining).toBe(0);
      env.clock.advance(Number(retryAfter) * 1000);
      expect((await env.client.call('POST', '/v1/ai', { key, body: valid })).status).toBe(202);
    });

    it('keeps the polls budget apart from the submits budget', async () => {
      const { key } = await env.app.account();
      const reqId = await submit(env.client, key);
      await spend(env.client, key, 'submits', 59);
      expectError(await env.client.call('POST', '/v1/ai', { key, body: valid }), 429, 'rate_limited');
      expect((await poll(env.client, key, reqId)).status).toBe(200);
    });

    it('counts the limit per account across all its keys, and not across accounts', async () => {
      const { accountId, key } = await env.app.account('starter');
      const second = await Effect.runPromise(env.app.accounts.createKey(accountId));
      const stranger = await env.app.account('starter');
      const first = await env.client.call('POST', '/v1/ai', { key, body: valid });
      expect(first.headers.get('ratelimit')).toBe('"submits";r=599;t=1');
      const other = await env.client.call('POST', '/v1/ai', { key: second.key, body: valid });
      expect(other.headers.get('ratelimit')).toBe('"submits";r=598;t=1');
      for (let batch = 0; batch < 13; batch++) {
        const answers = await Promise.all(
          Array.from({ length: 46 }, (_, i) =>
            env.client.call('POST', '/v1/ai', { key: i % 2 === 0 ? key : second.key, body: valid }),
          ),
        );
        expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 202));
      }
      for (const used of [key, second.key]) {
        const refused = await env.client.call('POST', '/v1/ai', { key: used, body: valid });
        expect(expectError(refused, 429, 'rate_limited').details?.budget).toBe('submits');
      }
      expect((await env.client.call('POST', '/v1/ai', { key: stranger.key, body: valid })).status).toBe(202);
    });

    it('answers 401 to a bad key with a bad or oversized body', async () => {
      for (const body of [badBody, oversized]) {
        const answer = await env.client.call('POST', '/v1/ai', { key: `sk_${'Z'.repeat(40)}`, body });
        expectError(answer, 401, 'unauthorized');
      }
    });

    it('answers 403 to a suspended account with a bad body', async () => {
      const { accountId, key } = await env.app.account();
      await Effect.runPromise(env.app.accounts.suspend(accountId));
      expectError(await env.client.call('POST', '/v1/ai', { key, body: badBody }), 403, 'forbidden');
    });

    it('answers 429 to a rate-limited account with a bad body, having counted the earlier 400s', async () => {
      const { key } = await env.app.account();
      await spend(env.client, key, 'submits', 60);
      expectError(await env.client.call('POST', '/v1/ai', { key, body: badBody }), 429, 'rate_limited');
      expectError(
        await env.client.call('POST', '/v1/ai', { key, body: valid, headers: { 'content-type': 'text/plain' } }),
        429,
        'rate_limited',
      );
      expectError(await env.client.call('POST', '/v1/ai', { key, body: oversized }), 429, 'rate_limited');
    });

    it('answers 400 to valid auth with a bad body', async () => {
      const { key } = await env.app.account();
      expectError(await env.client.call('POST', '/v1/ai', { key, body: badBody }), 400, 'invalid_request');
    });

    it('checks a poll in the same order: 401, then 429, then 400, then 404', async () => {
      const { key } = await env.app.account();
      expectError(await env.client.call('GET', '/v1/ai', { key: `sk_${'Z'.repeat(40)}` }), 401, 'unauthorized');
      expectError(await env.client.call('GET', '/v1/ai', { key }), 400, 'invalid_request');
      expectError(await poll(env.client, key, 'req_unknown'), 404, 'not_found');
      await spend(env.client, key, 'polls', 598);
      const refused = await env.client.call('GET', '/v1/ai', { key });
      expect(expectError(refused, 429, 'rate_limited').details?.budget).toBe('polls');
      expectError(await poll(env.client, key, 'req_unknown'), 429, 'rate_limited');
    });
  });
