import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/config.js';
import { defaultPlans } from '../../src/domain/plans.js';
import { forgetQueuedCounts, lmdbViewDifferences } from '../support/lmdbData.js';
import { postSubmission } from '../support/submit.js';
import { testApps } from '../support/testApp.js';

/** A model that never answers within these tests: its requests stay processing or waiting. */
const stuck: ModelConfig = { id: 'stuck', provider: 'echo', delayMs: 600_000, timeoutMs: 600_000 };
const plans = { ...defaultPlans, free: { ...defaultPlans.free, maxQueued: 3 } };

const waiter = { model: 'stuck', prompt: 'wait for me' };

describe('The bound on requests an account may have waiting or being processed (plans.<plan>.maxQueued)', () => {
  const start = testApps();

  it("refuses a submit beyond the bound with 429 rate_limited saying the queue is full, and accepts again once one is cancelled (LMDB's verify agreeing)", async () => {
    const app = await start({
      store: 'lmdb',
      config: { models: [stuck], plans, processing: { concurrency: 1, maxAttempts: 3 } },
    });
    const account = await app.account('free');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const answer = await postSubmission(app, account.key, waiter);
      expect(answer.status).toBe(202);
      ids.push(((await answer.json()) as { request_id: string }).request_id);
    }
    const refused = await postSubmission(app, account.key, waiter);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe(String(app.config.pollIntervalSeconds));
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('rate_limited');
    expect(body.error.message).toMatch(/queue is full/);
    expect(body.error.message).toMatch(/free plan allows 3/);

    // Another account's queue is its own.
    const other = await app.account('free');
    expect((await postSubmission(app, other.key, waiter)).status).toBe(202);

    await app.requests.cancel({ accountId: account.accountId, keyId: account.keyId, plan: 'free' }, ids[0] as string);
    expect((await postSubmission(app, account.key, waiter)).status).toBe(202);
    expect((await postSubmission(app, account.key, waiter)).status).toBe(429);
    expect(lmdbViewDifferences(app)).toEqual([]);
  });

  it('accepts exactly as many as the bound allows when many submits arrive at once (decided inside the write)', async () => {
    const app = await start({ config: { models: [stuck], plans, processing: { concurrency: 1, maxAttempts: 3 } } });
    const account = await app.account('free');
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => postSubmission(app, account.key, { model: 'stuck', prompt: `burst ${i}` })),
    );
    expect(answers.filter((a) => a.status === 202)).toHaveLength(3);
    expect(answers.filter((a) => a.status === 429)).toHaveLength(17);
  });

  it('counts the requests of an LMDB data directory written before the count existed, once, at its first open', async () => {
    const app = await start({
      store: 'lmdb',
      config: { models: [stuck], plans, processing: { concurrency: 1, maxAttempts: 3 } },
    });
    const account = await app.account('free');
    for (let i = 0; i < 3; i++) expect((await postSubmission(app, account.key, waiter)).status).toBe(202);
    await app.close();
    // As an older airs left it: no counts, no marker.
    expect(await forgetQueuedCounts(app.dataDir)).toContain(
      `queued count of account ${account.accountId}: produced by the log but not stored`,
    );

    const reopened = await start({
      storeOf: app,
      config: { models: [stuck], plans, processing: { concurrency: 1, maxAttempts: 3 } },
    });
    expect(lmdbViewDifferences(reopened)).toEqual([]);
    expect((await postSubmission(reopened, account.key, waiter)).status).toBe(429);
  });
});
