import { describe, expect, it } from 'vitest';
import type { LmdbStore } from '../../src/adapters/lmdb/LmdbStore.js';
import { verifyViews } from '../../src/adapters/lmdb/verify.js';
import type { ManualClock } from '../../src/ports/Clock.js';
import { dayStartOf } from '../../src/storage/projection.js';
import { syncReads, type TestApp, testApps } from '../support/testApp.js';

const dayMs = 86_400_000;

const submit = async (app: TestApp, key: string, prompt: string) => {
  const answer = await app.call('POST', '/v1/ai', { key, body: { model: 'echo', prompt } });
  expect(answer.status).toBe(202);
  return ((await answer.json()) as { request_id: string }).request_id;
};

describe('Token usage of completed requests', () => {
  const start = testApps();

  it('is recorded in the completion event and the view, and added up per account and UTC day', async () => {
    const app = await start();
    const clock = app.clock as ManualClock;
    const { key, accountId } = await app.account();
    const first = await submit(app, key, 'one two three');
    await submit(app, key, 'four');
    await app.processor.idle();
    const completed = [...syncReads(app).events()].find((e) => e.type === 'RequestCompleted' && e.reqId === first);
    // echo counts whitespace-separated words of what it read and of what it wrote.
    expect(completed).toMatchObject({ inputTokens: 3, outputTokens: 3 });
    expect(syncReads(app).request(first)?.context).toMatchObject({ inputTokens: 3, outputTokens: 3 });

    clock.advance(dayMs);
    await submit(app, key, 'five six');
    await app.processor.idle();
    const today = dayStartOf(clock.now());
    expect(syncReads(app).usageByDay(accountId, today - 2 * dayMs, 3)).toEqual([
      { day: today - 2 * dayMs, inputTokens: 0, outputTokens: 0 },
      { day: today - dayMs, inputTokens: 4, outputTokens: 4 },
      { day: today, inputTokens: 2, outputTokens: 2 },
    ]);
    // Another account's usage is its own.
    const other = await app.account();
    expect(syncReads(app).usageByDay(other.accountId, today, 1)).toEqual([
      { day: today, inputTokens: 0, outputTokens: 0 },
    ]);
    // Expiry deletes the text, not the usage.
    clock.advance(2 * dayMs);
    await app.sweeper.sweep();
    expect(syncReads(app).usageByDay(accountId, today - dayMs, 1)[0]).toMatchObject({ inputTokens: 4 });
    expect(verifyViews((app.store as LmdbStore).databases).differences).toEqual([]);
  });

  it('is rebuilt from the log by replay --verify, which reports a day that differs', async () => {
    const app = await start();
    const { key, accountId } = await app.account();
    await submit(app, key, 'count these four words');
    await app.processor.idle();
    const { databases } = app.store as LmdbStore;
    const day = dayStartOf(app.clock.now());
    await databases.dailyUsage.put([accountId, day], [5, 4]);
    expect(verifyViews(databases).differences).toEqual([
      `daily usage ${accountId}\u0001${day}: the stored value differs from the log's`,
    ]);
  });
});
