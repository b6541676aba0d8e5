import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/config.js';
import type { ManualClock } from '../../src/ports/Clock.js';
import { submit } from '../support/submit.js';
import { eventually, loggedEvents, servedTestApps, type TestApp } from '../support/testApp.js';

/**
 * Service tiers (contract 20) through the faces a client calls: the tier asked for in `service_tier` (on `/v1/ai`,
 * Responses and chat completions), served at it when the plan allows it, else at the best allowed tier below; every
 * answer says the tier; and one worker starts due priority work first, then default, then flex, with default work
 * promoted once it has waited `processing.promoteAfterSeconds`.
 */

const start = servedTestApps();
const echo = (id: string, delayMs: number): ModelConfig => ({ id, provider: 'echo', delayMs, timeoutMs: 600_000 });
/** One worker, held by a `slow` request (its call ends only when cancelled) while the tiers' requests queue. */
const config = {
  models: [echo('slow', 600_000), echo('echo', 0)],
  processing: { concurrency: 1, maxAttempts: 1, leaseSeconds: 3_600, promoteAfterSeconds: 60 },
};

const clientOf = (url: string, key: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 });

/** Holds the one worker with a background Response of `slow`, and returns what frees it. */
const holdTheWorker = async (app: TestApp, url: string, key: string) => {
  const client = clientOf(url, key);
  const busy = await client.responses.create({ model: 'slow', input: 'hold the worker', background: true });
  await eventually(async () =>
    (await app.store.reads.request(`req_${busy.id.slice('resp_'.length)}`))?.status === 'processing' ? true : undefined,
  );
  return () => client.responses.cancel(busy.id);
};

/** The requests among `ids` in the order their first attempts started, as the log has them. */
const startOrder = async (app: TestApp, ids: readonly string[]) => {
  await eventually(async () => {
    const started = (await loggedEvents(app)).filter((e) => e.type === 'RequestProcessingStarted');
    return ids.every((id) => started.some((e) => 'reqId' in e && e.reqId === id)) ? true : undefined;
  });
  return (await loggedEvents(app))
    .filter((e) => e.type === 'RequestProcessingStarted' && ids.includes((e as { reqId: string }).reqId))
    .map((e) => (e as { reqId: string }).reqId);
};

describe('service tiers', () => {
  it('starts queued priority work first, then default, then flex, on one worker, whichever was queued first', async () => {
    const { app, served } = await start({ store: 'lmdb', config });
    const team = await app.account('scale');
    const other = await app.account('scale');
    const free = await holdTheWorker(app, served.url, team.key);
    const flex = await submit(app, team.key, { prompt: 'a tiered prompt', fields: { service_tier: 'flex' } });
    const plain = await submit(app, other.key, { prompt: 'a tiered prompt' });
    const auto = await submit(app, team.key, { prompt: 'a tiered prompt', fields: { service_tier: 'auto' } });
    const priority = await submit(app, other.key, { prompt: 'a tiered prompt', fields: { service_tier: 'priority' } });
    await free();
    const order = await startOrder(app, [flex, plain, auto, priority]);
    expect(order[0]).toBe(priority);
    // Default work of the two accounts in turn, then flex.
    expect(new Set(order.slice(1, 3))).toEqual(new Set([plain, auto]));
    expect(order[3]).toBe(flex);

    // Each first start is counted in the queue wait histogram under its model and tier (when its attempt reads its
    // input, just after the start is logged).
    const metrics = await eventually(async () => {
      const text = await (await app.call('GET', '/metrics')).text();
      return text.includes('airs_queue_wait_seconds_count{model="echo",tier="flex"}') ? text : undefined;
    });
    const count = (tier: string) =>
      Number(
        metrics.match(new RegExp(`^airs_queue_wait_seconds_count\\{model="echo",tier="${tier}"\\} (\\d+)`, 'm'))?.[1],
      );
    expect([count('priority'), count('default'), count('flex')]).toEqual([1, 2, 1]);
  });

  it('promotes a default request that waited promoteAfterSeconds to go in turn with priority work', async () => {
    const { app, served } = await start({ store: 'lmdb', config });
    const team = await app.account('scale');
    const other = await app.account('scale');
    const free = await holdTheWorker(app, served.url, team.key);
    const old = await submit(app, team.key, { prompt: 'a tiered prompt' });
    (app.clock as ManualClock).advance(61_000);
    const newer = await submit(app, team.key, { prompt: 'a tiered prompt' });
    const priorities = [
      await submit(app, other.key, { prompt: 'a tiered prompt', fields: { service_tier: 'priority' } }),
      await submit(app, other.key, { prompt: 'a tiered prompt', fields: { service_tier: 'priority' } }),
    ];
    await free();
    const order = await startOrder(app, [old, newer, ...priorities]);
    // Without promotion it would start third; promoted, it goes in turn with the other account's priority work.
    expect(order.indexOf(old)).toBeLessThanOrEqual(1);
    expect(order.at(-1)).toBe(newer);
  });

  it('serves a tier the plan does not allow at the best allowed tier below it, and every face says the tier served', async () => {
    const { app, served } = await start({ store: 'lmdb', config: { models: [echo('echo', 0)] } });
    const free = await app.account('free');
    const scale = await app.account('scale');

    for (const [account, asked, servedAt] of [
      [free, 'priority', 'default'],
      [free, 'flex', 'flex'],
      [free, undefined, 'default'],
      [scale, 'priority', 'priority'],
      [scale, 'auto', 'default'],
    ] as const) {
      const client = clientOf(served.url, account.key);
      const tier = asked === undefined ? {} : { service_tier: asked };
      const completion = await client.chat.completions.create({
        model: 'echo',
        messages: [{ role: 'user', content: 'hello' }],
        ...tier,
      });
      expect(completion.service_tier).toBe(servedAt);
      const response = await client.responses.create({ model: 'echo', input: 'hello', ...tier });
      expect(response.service_tier).toBe(servedAt);
      const reqId = await submit(app, account.key, {
        prompt: 'a tiered prompt',
        fields: asked === undefined ? {} : { service_tier: asked },
      });
      const polled = await eventually(async () => {
        const answer = await app.call('GET', `/v1/ai?req_id=${reqId}`, { key: account.key });
        const body = (await answer.json()) as { status: string; service_tier: string };
        return body.status === 'completed' ? body : undefined;
      });
      expect(polled.service_tier).toBe(servedAt);
    }
  });

  it('refuses a service_tier that is not one of the four with a 400 naming the field', async () => {
    const { app, served } = await start({ store: 'memory', config: { models: [echo('echo', 0)] } });
    const { key } = await app.account('scale');
    const answer = await app.call('POST', '/v1/ai', {
      key,
      body: { model: 'echo', prompt: 'x', service_tier: 'gold' },
    });
    expect(answer.status).toBe(400);
    expect(JSON.stringify(await answer.json())).toContain('service_tier');
    const chat = await fetch(`${served.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'echo', messages: [{ role: 'user', content: 'x' }], service_tier: 'gold' }),
    });
    expect(chat.status).toBe(400);
    expect(((await chat.json()) as { error: { param: string } }).error.param).toBe('service_tier');
  });
});
