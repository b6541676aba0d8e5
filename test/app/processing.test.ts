import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/config.js';
import type { StoredEvent } from '../../src/domain/events.js';
import type { ManualClock } from '../../src/ports/Clock.js';
import { submit } from '../support/submit.js';
import { eventually, loggedEvents, startTestApp, type TestApp, testApps } from '../support/testApp.js';

const model = (id: string, delayMs: number, timeoutMs = 60_000): ModelConfig => ({
  id,
  provider: 'echo',
  delayMs,
  timeoutMs,
});
const eventsOf = async (app: TestApp, reqId: string) =>
  (await loggedEvents(app)).filter((e): e is StoredEvent & { reqId: string } => 'reqId' in e && e.reqId === reqId);
const types = async (app: TestApp, reqId: string) => (await eventsOf(app, reqId)).map((e) => e.type);

describe('Processing', () => {
  const start = testApps();

  it('retries a failing attempt after a backoff and fails the request for good after maxAttempts', async () => {
    const app = await start({
      config: { models: [model('hang', 10_000, 20)], processing: { concurrency: 2, maxAttempts: 3 } },
    });
    const clock = app.clock as ManualClock;
    const { key } = await app.account();
    const reqId = await submit(app, key, { model: 'hang' });
    await eventually(async () => ((await types(app, reqId)).includes('RequestAttemptFailed') ? true : undefined));
    await app.processor.idle();
    // Before the backoff has passed nothing is retried.
    expect((await types(app, reqId)).filter((t) => t === 'RequestProcessingStarted')).toHaveLength(1);
    clock.advance(1_000);
    app.processor.wake();
    await eventually(async () =>
      (await types(app, reqId)).filter((t) => t === 'RequestAttemptFailed').length === 2 ? true : undefined,
    );
    clock.advance(2_000);
    app.processor.wake();
    await eventually(async () => ((await types(app, reqId)).includes('RequestFailed') ? true : undefined));
    expect(await types(app, reqId)).toEqual([
      'RequestQueued',
      'RequestProcessingStarted',
      'RequestAttemptFailed',
      'RequestProcessingStarted',
      'RequestAttemptFailed',
      'RequestProcessingStarted',
      'RequestFailed',
    ]);
    const failed = (await eventsOf(app, reqId)).at(-1) as { reason: string };
    expect(failed.reason).toBe('gave up after 3 attempts: timed out after 20 ms');
    const polled = await app.call('GET', `/v1/ai?req_id=${reqId}`, { key });
    expect(polled.status).toBe(500);
    const body = (await polled.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('server_error');
    expect(body.error.message).not.toContain('timed out');
  });

  it('does not let a hanging model hold a worker: with one worker, the next request completes after the timeout', async () => {
    const app = await start({
      config: { models: [model('hang', 10_000, 30), model('echo', 0)], processing: { concurrency: 1, maxAttempts: 1 } },
    });
    const { key } = await app.account('starter');
    const hung = await submit(app, key, { model: 'hang' });
    const quick = await submit(app, key, { model: 'echo' });
    await eventually(async () => ((await types(app, quick)).includes('RequestCompleted') ? true : undefined));
    expect(await types(app, hung)).toContain('RequestFailed');
  });

  it('after a restart, continues requests that were queued or being processed when the process stopped (a clean stop gives the one being processed back at once)', async () => {
    const first = await startTestApp({
      config: { models: [model('m', 60_000)], processing: { concurrency: 1, maxAttempts: 3 } },
    });
    const { key } = await first.account('starter');
    const processing = await submit(first, key, { model: 'm', prompt: 'first' });
    const waiting = await submit(first, key, { model: 'm', prompt: 'second' });
    await eventually(async () =>
      (await types(first, processing)).includes('RequestProcessingStarted') ? true : undefined,
    );
    await first.stop({ keepData: true });

    const second = await start({
      storeOf: first,
      clock: first.clock,
      config: { models: [model('m', 0)], processing: { concurrency: 1, maxAttempts: 3 } },
    });
    await eventually(async () => ((await types(second, waiting)).includes('RequestCompleted') ? true : undefined));
    expect(await types(second, processing)).toEqual([
      'RequestQueued',
      'RequestProcessingStarted',
      'RequestReleased',
      'RequestProcessingStarted',
      'RequestCompleted',
    ]);
    for (const [reqId, prompt] of [
      [processing, 'first'],
      [waiting, 'second'],
    ] as const) {
      const polled = await second.call('GET', `/v1/ai?req_id=${reqId}`, { key });
      expect(await polled.json()).toMatchObject({ status: 'completed', response: prompt });
    }
  });

  it('takes queued requests in the order they were submitted', async () => {
    const app = await start({ config: { models: [model('echo', 0)], processing: { concurrency: 1, maxAttempts: 1 } } });
    const { key } = await app.account('starter');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(await submit(app, key, { model: 'echo', prompt: `p${i}` }));
      (app.clock as ManualClock).advance(1);
    }
    await app.processor.idle();
    const completedOrder = (await loggedEvents(app))
      .filter((e) => e.type === 'RequestCompleted')
      .map((e) => (e as { reqId: string }).reqId);
    expect(completedOrder).toEqual(ids);
  });
});
