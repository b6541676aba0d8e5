import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config.js';
import { defaultPlans } from '../../src/domain/plans.js';
import type { ManualClock } from '../../src/ports/Clock.js';
import { batchWhen, chatLines, createBatch, fileContent, isEnded, uploadLines } from '../support/batches.js';
import { servedTestApps } from '../support/testApp.js';

/**
 * A batch and its account's token budget (contract 21): checked when the batch is made, and its runner stops queueing
 * lines once the budget is used; the lines it never queued end failed with `insufficient_quota`.
 */

const start = servedTestApps();
// Echo counts words: each line is 5 tokens in and 5 out.
const tenTokens = 'one two three four five';
const budget = 25;

describe.each(['memory', 'lmdb', 'postgres'] as const)('a batch on the %s store', (store) => {
  it('stops queueing lines once its account used its day budget, ends completed with the rest failed as insufficient_quota, and a new batch is refused at creation', async () => {
    const defaults = defaultConfig();
    const { app, served } = await start({
      store,
      config: {
        models: [{ id: 'echo', provider: 'echo', delayMs: 50, timeoutMs: 60_000 }],
        plans: { ...defaultPlans, free: { ...defaultPlans.free, tokensPerDay: budget } },
        processing: { concurrency: 4, maxAttempts: 1 },
        // Two lines ahead at most: the budget is looked at again before each write of lines.
        batches: { ...defaults.batches, maxLinesAhead: 2 },
      },
    });
    (app.clock as ManualClock).set(Date.UTC(2026, 2, 10, 12));
    const { accountId, key } = await app.account('free');
    const lines = 10;
    const fileId = await uploadLines(served.url, key, chatLines('echo', Array(lines).fill(tenTokens)));
    const created = await createBatch(served.url, key, fileId);
    const ended = await batchWhen(served.url, key, created.id, isEnded);

    expect(ended.status).toBe('completed');
    const { completed, failed, total } = ended.request_counts;
    expect(total).toBe(lines);
    expect(completed + failed).toBe(lines);
    // Reached after three lines at the earliest, and overspent by at most the lines queued then (two ahead).
    expect(completed).toBeGreaterThanOrEqual(Math.ceil(budget / 10));
    expect(completed).toBeLessThanOrEqual(Math.ceil(budget / 10) + 2);
    const day = (await app.store.reads.tokenUse(accountId)).find((bucket) => bucket.kind === 'day');
    expect(day?.tokens).toBe(completed * 10);

    const errors = (await fileContent(served.url, key, ended.error_file_id as string))
      .toString('utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { error: { code: string; message: string } });
    expect(errors).toHaveLength(failed);
    for (const { error } of errors) {
      expect(error.code).toBe('insufficient_quota');
      expect(error.message).toContain('tokensPerDay');
    }

    const client = new OpenAI({ baseURL: `${served.url}/v1`, apiKey: key, maxRetries: 0 });
    const refused = await client.batches
      .create({ input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: '24h' })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    expect((refused as InstanceType<typeof OpenAI.RateLimitError>).code).toBe('insufficient_quota');
  });
});
