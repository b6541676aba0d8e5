import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/config.js';
import type { RequestEvent } from '../../src/domain/request/events.js';
import { systemClock } from '../../src/ports/Clock.js';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';
import { unusedPort } from '../support/ports.js';
import { syncReads, testApps } from '../support/testApp.js';

describe('Calls of a model with several upstreams', () => {
  const start = testApps();

  it('go to the upstream each attempt holds a place on, and never more at once on one than its places', async () => {
    const one = await startFakeOpenAi({ delayMs: 150 });
    const two = await startFakeOpenAi({ delayMs: 150 });
    try {
      const app = await start({
        clock: systemClock,
        config: {
          models: [
            {
              id: 'llama',
              provider: 'openai',
              upstreamModel: 'm',
              timeoutMs: 60_000,
              maxRetries: 0,
              upstreams: [
                { name: 'one', baseUrl: one.baseUrl, maxConcurrency: 1 },
                { name: 'two', baseUrl: two.baseUrl, maxConcurrency: 2 },
              ],
            } as ModelConfig,
          ],
          processing: { concurrency: 10, maxAttempts: 3 },
        },
      });
      const account = await app.account('scale');
      const ids: string[] = [];
      for (let n = 0; n < 9; n++) {
        const answer = await app.call('POST', '/v1/ai', {
          key: account.key,
          body: { model: 'llama', prompt: `prompt ${n}` },
        });
        ids.push(((await answer.json()) as { request_id: string }).request_id);
      }
      await app.processor.idle();
      const events = [...syncReads(app).events()] as (RequestEvent & { seq: number })[];
      const where = new Map<string, string>();
      let running = { one: 0, two: 0 } as Record<string, number>;
      const most = { one: 0, two: 0 } as Record<string, number>;
      for (const event of events) {
        if (event.type === 'RequestProcessingStarted') {
          where.set(event.reqId, event.upstream ?? 'none');
          running = { ...running, [event.upstream ?? 'none']: (running[event.upstream ?? 'none'] ?? 0) + 1 };
          for (const name of ['one', 'two']) most[name] = Math.max(most[name] ?? 0, running[name] ?? 0);
        }
        if (event.type === 'RequestCompleted') {
          const upstream = where.get(event.reqId) ?? 'none';
          running = { ...running, [upstream]: (running[upstream] ?? 0) - 1 };
        }
      }
      expect(ids.every((reqId) => syncReads(app).request(reqId)?.status === 'completed')).toBe(true);
      // Each upstream received exactly the prompts whose attempt named it.
      const promptsOn = (name: string) =>
        ids.flatMap((reqId, n) => (where.get(reqId) === name ? [`prompt ${n}`] : [])).sort();
      const receivedBy = (server: typeof one) =>
        server.received.map((call) => call.body.messages.at(-1)?.content ?? '').sort();
      expect(receivedBy(one)).toEqual(promptsOn('one'));
      expect(receivedBy(two)).toEqual(promptsOn('two'));
      expect(one.received.length + two.received.length).toBe(9);
      expect(one.received.length).toBeGreaterThan(0);
      expect(most).toEqual({ one: 1, two: 2 });
    } finally {
      await one.close();
      await two.close();
    }
  });

  it('move an attempt whose upstream refuses connections to another upstream, spending no attempt, so none fails', async () => {
    const alive = await startFakeOpenAi({ delayMs: 20 });
    try {
      const app = await start({
        clock: systemClock,
        config: {
          models: [
            {
              id: 'llama',
              provider: 'openai',
              upstreamModel: 'm',
              timeoutMs: 60_000,
              maxRetries: 2,
              upstreams: [
                { name: 'dead', baseUrl: `http://127.0.0.1:${await unusedPort()}/v1`, maxConcurrency: 4 },
                // Room for every call: a failover finds a free place (with none, the attempt fails as before).
                { name: 'alive', baseUrl: alive.baseUrl, maxConcurrency: 8 },
              ],
            } as ModelConfig,
          ],
          // One attempt each: without failover, a request whose attempt lands on the dead upstream fails for good.
          processing: { concurrency: 8, maxAttempts: 1 },
        },
      });
      const account = await app.account('scale');
      const ids: string[] = [];
      for (let n = 0; n < 8; n++) {
        const answer = await app.call('POST', '/v1/ai', {
          key: account.key,
          body: { model: 'llama', prompt: `p ${n}` },
        });
        ids.push(((await answer.json()) as { request_id: string }).request_id);
      }
      await app.processor.idle();
      const events = [...syncReads(app).events()] as RequestEvent[];
      const moves = events.filter((event) => event.type === 'RequestUpstreamChanged');
      expect(moves.length).toBeGreaterThan(0);
      expect(
        moves.every((move) => move.type === 'RequestUpstreamChanged' && move.from === 'dead' && move.to === 'alive'),
      ).toBe(true);
      for (const reqId of ids)
        expect(syncReads(app).request(reqId)).toMatchObject({ status: 'completed', context: { attempts: 1 } });
      expect(alive.received).toHaveLength(8);
    } finally {
      await alive.close();
    }
  });
});
