import { afterEach, describe, expect, it } from 'vitest';
import { defaultCommitterLimits } from '../../src/app/Committer.js';
import { systemClock } from '../../src/ports/Clock.js';
import type { StoreShape } from '../../src/ports/Store.js';
import { postSubmission } from '../support/submit.js';
import { eventually, startTestApp, type TestApp } from '../support/testApp.js';

/** The test's store, with every commit made 30 ms slower: a disk that cannot keep up. */
const slow = (store: StoreShape): StoreShape => ({
  ...store,
  commit: async (batch) => {
    await new Promise((resolve) => setTimeout(resolve, 30));
    return store.commit(batch);
  },
});

describe('Backpressure: a committer that cannot keep up', () => {
  let app: TestApp | undefined;
  afterEach(async () => {
    await app?.stop();
    app = undefined;
  });

  it('answers 503 with Retry-After beyond its bound, holds no more than the bound, and completes everything it acknowledged', async () => {
    const maxQueued = 16;
    app = await startTestApp({
      clock: systemClock,
      wrapStore: slow,
      committerLimits: { ...defaultCommitterLimits, maxQueued },
      config: { processing: { concurrency: 4, maxAttempts: 3 } },
    });
    const running = app;
    const { key } = await running.account('enterprise');

    let mostPending = 0;
    const sampler = setInterval(() => {
      mostPending = Math.max(mostPending, running.committer.pending());
    }, 1);
    const answers = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const response = await postSubmission(running, key, { prompt: `p${i}` });
        return { status: response.status, headers: response.headers, body: (await response.json()) as never };
      }),
    );
    clearInterval(sampler);

    const refused = answers.filter((answer) => answer.status === 503);
    const accepted = answers.filter((answer) => answer.status === 202);
    expect(refused.length).toBeGreaterThan(0);
    expect(accepted.length + refused.length).toBe(200);
    for (const answer of refused) {
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(answer.body).toMatchObject({ error: { code: 'server_error' } });
    }
    // Held at once: the API's bound, plus what the workers (4) may add of their own.
    expect(mostPending).toBeLessThanOrEqual(maxQueued + 4);

    const reqIds = accepted.map((answer) => (answer.body as { request_id: string }).request_id);
    await eventually(async () => {
      for (const reqId of reqIds) {
        const poll = await running.call('GET', `/v1/ai?req_id=${reqId}`, { key });
        if (((await poll.json()) as { status?: string }).status !== 'completed') return undefined;
      }
      return true;
    }, 30_000);
  });
});
