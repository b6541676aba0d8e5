import { describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/ports/Clock.js';
import { dayStartOf } from '../../src/storage/projection.js';
import { lmdbDatabasesOf, lmdbViewDifferences } from '../support/lmdbData.js';
import { submit } from '../support/submit.js';
import { loggedEvents, testApps } from '../support/testApp.js';

const dayMs = 86_400_000;

describe('Token usage of completed requests', () => {
  const start = testApps();

  it('is recorded in the completion event and the view, and added up per account and UTC day (on LMDB, its verify agreeing)', async () => {
    const app = await start({ store: 'lmdb' });
    const clock = app.clock as ManualClock;
    const { key, accountId } = await app.account();
    const first = await submit(app, key, { prompt: 'one two three' });
    await submit(app, key, { prompt: 'four' });
    await app.processor.idle();
    const completed = (await loggedEvents(app)).find((e) => e.type === 'RequestCompleted' && e.reqId === first);
    // echo counts whitespace-separated words of what it read and of what it wrote.
    expect(completed).toMatchObject({ inputTokens: 3, outputTokens: 3 });
    expect((await app.store.reads.request(first))?.context).toMatchObject({ inputTokens: 3, outputTokens: 3 });

    clock.advance(dayMs);
    await submit(app, key, { prompt: 'five six' });
    await app.processor.idle();
    const today = dayStartOf(clock.now());
    expect(await app.store.reads.usageByDay(accountId, today - 2 * dayMs, 3)).toEqual([
      { day: today - 2 * dayMs, inputTokens: 0, outputTokens: 0 },
      { day: today - dayMs, inputTokens: 4, outputTokens: 4 },
      { day: today, inputTokens: 2, outputTokens: 2 },
    ]);
    // Another account's usage is its own.
    const other = await app.account();
    expect(await app.store.reads.usageByDay(other.accountId, today, 1)).toEqual([
      { day: today, inputTokens: 0, outputTokens: 0 },
    ]);
    // Expiry deletes the text, not the usage.
    clock.advance(2 * dayMs);
    await app.sweeper.sweep();
    expect((await app.store.reads.usageByDay(accountId, today - dayMs, 1))[0]).toMatchObject({ inputTokens: 4 });
    expect(lmdbViewDifferences(app)).toEqual([]);
  });

  it("is rebuilt from the log by LMDB's replay --verify, which reports a day that differs", async () => {
    const app = await start({ store: 'lmdb' });
    const { key, accountId } = await app.account();
    await submit(app, key, { prompt: 'count these four words' });
    await app.processor.idle();
    const databases = lmdbDatabasesOf(app);
    const day = dayStartOf(app.clock.now());
    await databases.dailyUsage.put([accountId, day], [5, 4]);
    expect(lmdbViewDifferences(app)).toEqual([
      `daily usage ${accountId}\u0001${day}: the stored value differs from the log's`,
    ]);
  });
});
