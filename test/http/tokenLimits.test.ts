import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/config.js';
import { defaultPlans, type PlanLimits } from '../../src/domain/plans.js';
import type { ManualClock } from '../../src/ports/Clock.js';
import { eventually, servedTestApps, type TestApp } from '../support/testApp.js';
import type { StoreKind } from '../support/testStore.js';

/**
 * Token limits and budgets (contract 21) through HTTP, on every store: the tokens of requests that ended refuse
 * further submits, with OpenAI's codes as the official SDK reads them.
 */

const echo = (id: string, delayMs: number): ModelConfig => ({ id, provider: 'echo', delayMs, timeoutMs: 60_000 });
// Echo counts words: this prompt is 5 tokens in and 5 out, 10 in all.
const tenTokens = 'one two three four five';
const start = servedTestApps();

const startWith = async (store: StoreKind, limits: Partial<PlanLimits>) => {
  const { app, served } = await start({
    store,
    config: {
      models: [echo('echo', 0), echo('slowish', 300)],
      plans: { ...defaultPlans, free: { ...defaultPlans.free, ...limits } },
      processing: { concurrency: 4, maxAttempts: 1 },
    },
  });
  const { key } = await app.account('free');
  const client = new OpenAI({ baseURL: `${served.url}/v1`, apiKey: key, maxRetries: 0 });
  return { app, served, key, client, clock: app.clock as ManualClock };
};

const submitAi = (url: string, key: string, model = 'echo') =>
  fetch(`${url}/v1/ai`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, prompt: tenTokens }),
  });

const completed = (app: TestApp, reqIds: readonly string[]) =>
  eventually(async () => {
    const states = await app.store.reads.requests(reqIds);
    return states.every((state) => state?.status === 'completed') ? true : undefined;
  }, 10_000);

/** What the SDK throws from a call, as an `APIError`. */
const sdkError = async (call: Promise<unknown>) => {
  const error = await call.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(OpenAI.APIError);
  return error as InstanceType<typeof OpenAI.APIError>;
};

describe.each(['memory', 'lmdb', 'postgres'] as const)('token limits on the %s store', (store) => {
  it('answers 429 insufficient_quota on every face once the day budget is used, naming it and its reset, while the work accepted before it finishes', async () => {
    const { app, served, key, client, clock } = await startWith(store, { tokensPerDay: 20 });
    clock.set(Date.UTC(2026, 2, 10, 12));
    // Three accepted at once, before any ends: 30 tokens, over the budget of 20, and all three finish.
    const accepted = await Promise.all([1, 2, 3].map(() => submitAi(served.url, key, 'slowish')));
    expect(accepted.map((response) => response.status)).toEqual([202, 202, 202]);
    const reqIds = await Promise.all(
      accepted.map(async (r) => ((await r.json()) as { request_id: string }).request_id),
    );
    await completed(app, reqIds);

    const chat = await sdkError(
      client.chat.completions.create({ model: 'echo', messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect(chat).toBeInstanceOf(OpenAI.RateLimitError);
    expect(chat.status).toBe(429);
    expect(chat.code).toBe('insufficient_quota');
    expect(chat.message).toContain('tokensPerDay');
    expect(chat.message).toContain('2026-03-11T00:00:00.000Z');
    const responses = await sdkError(client.responses.create({ model: 'echo', input: 'hi' }));
    expect(responses).toBeInstanceOf(OpenAI.RateLimitError);
    expect(responses.code).toBe('insufficient_quota');

    const ai = await submitAi(served.url, key);
    expect(ai.status).toBe(429);
    // Retry-After says when the budget resets (12 hours), and OpenAI's SDKs are told not to retry on their own.
    expect(ai.headers.get('retry-after')).toBe(String(12 * 3600));
    expect(ai.headers.get('x-should-retry')).toBe('false');
    const body = (await ai.json()) as { error: { code: string; message: string; details: Record<string, unknown> } };
    expect(body.error.code).toBe('insufficient_quota');
    expect(body.error.details).toEqual({
      budget: 'tokensPerDay',
      limit: 20,
      used: 30,
      resets_at: '2026-03-11T00:00:00.000Z',
    });

    // The next UTC day the budget is whole again.
    clock.set(Date.UTC(2026, 2, 11, 0, 0, 1));
    expect((await submitAi(served.url, key)).status).toBe(202);
  });

  it('answers 429 rate_limited with Retry-After while the tokens of the last 60 s are at tokensPerMinute, and takes submits again once they left the window', async () => {
    const { app, served, key, client, clock } = await startWith(store, { tokensPerMinute: 10, tokensPerMonth: 1_000 });
    clock.set(Date.UTC(2026, 2, 10, 12));
    const first = await submitAi(served.url, key);
    expect(first.status).toBe(202);
    await completed(app, [((await first.json()) as { request_id: string }).request_id]);

    clock.advance(15_000);
    const refused = await sdkError(
      client.chat.completions.create({ model: 'echo', messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    expect(refused.code).toBe('rate_limited');
    expect(refused.headers?.get('retry-after')).toBe('45');
    expect(refused.message).toContain('tokensPerMinute');

    clock.advance(45_000);
    const again = await client.chat.completions.create({ model: 'echo', messages: [{ role: 'user', content: 'hi' }] });
    expect(again.choices[0]?.message.content).toBe('hi');
  });

  it('answers 429 insufficient_quota for the month once tokensPerMonth is used, until the first of the next month (UTC)', async () => {
    const { app, served, key, clock } = await startWith(store, { tokensPerMonth: 10 });
    clock.set(Date.UTC(2026, 11, 31, 23, 0));
    const first = await submitAi(served.url, key);
    await completed(app, [((await first.json()) as { request_id: string }).request_id]);
    const refused = await submitAi(served.url, key);
    expect(refused.status).toBe(429);
    const body = (await refused.json()) as { error: { code: string; details: Record<string, unknown> } };
    expect(body.error.code).toBe('insufficient_quota');
    expect(body.error.details).toMatchObject({ budget: 'tokensPerMonth', resets_at: '2027-01-01T00:00:00.000Z' });
    clock.set(Date.UTC(2027, 0, 1));
    expect((await submitAi(served.url, key)).status).toBe(202);
  });
});
