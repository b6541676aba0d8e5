import { describe, expect, it } from 'vitest';
import { usageRoute } from '../../src/adapters/http/admin/usageRoute.js';
import { usagePage } from '../../src/app/usage.js';
import type { StoreShape } from '../../src/ports/Store.js';
import { accountId, answer, commitOne, queueOf, submit } from '../contract/fixtures.js';
import { openStoreOf } from '../support/testStore.js';

const hourMs = 3_600_000;
const dayMs = 24 * hourMs;
/** A UTC midnight (2026-01-01), in ms and in Unix seconds. */
const day0 = Date.UTC(2026, 0, 1);
const s = (ms: number) => ms / 1000;

/** Completes requests of (account, model) at the given times; each reads 3 tokens and writes 5 (fixtures' answer). */
const completeAt = async (store: StoreShape, plan: readonly (readonly [number, string, number])[]) => {
  let n = 0;
  for (const [account, model, at] of plan) {
    const reqId = `req_${at}_${++n}`;
    await commitOne(store, submit(reqId, { account, model, now: at - 1, ttlMs: 40 * dayMs }));
    await commitOne(store, { type: 'StartAttempt', reqId, now: at - 1, owner: 'A', leaseMs: 10_000 });
    expect(await queueOf(store).recordSuccess({ reqId, attempt: 1, owner: 'A' }, answer('ok'), at)).toBe('recorded');
  }
};

const result = (requests: number, account: number | null, model: string | null) => ({
  object: 'organization.usage.completions.result',
  input_tokens: 3 * requests,
  output_tokens: 5 * requests,
  num_model_requests: requests,
  account_id: account === null ? null : accountId(account),
  model,
});

const bucket = (startMs: number, widthMs: number, results: unknown[]) => ({
  object: 'bucket',
  start_time: s(startMs),
  end_time: s(startMs + widthMs),
  results,
});

const seeded = async () => {
  const store = openStoreOf('memory');
  await completeAt(store, [
    [1, 'echo', day0 + 10],
    [1, 'echo', day0 + 20],
    [2, 'echo', day0 + 30],
    [1, 'small', day0 + hourMs + 5],
    [2, 'small', day0 + dayMs + 2 * hourMs],
    [1, 'echo', day0 + 3 * dayMs],
  ]);
  return store;
};

describe('The usage API page (OpenAI’s usage shape over the hourly view)', () => {
  it('puts each day’s use in one UTC-day bucket by default, one total per bucket, and leaves out days without use', async () => {
    const store = await seeded();
    expect(await usageRoute({ start_time: String(s(day0)) }, store)).toEqual({
      object: 'page',
      data: [
        bucket(day0, dayMs, [result(4, null, null)]),
        bucket(day0 + dayMs, dayMs, [result(1, null, null)]),
        bucket(day0 + 3 * dayMs, dayMs, [result(1, null, null)]),
      ],
      has_more: false,
      next_page: null,
    });
  });

  it('buckets by UTC hour and groups by account, model or both, results in account then model order', async () => {
    const store = await seeded();
    const query = { start_time: String(s(day0)), end_time: String(s(day0 + dayMs)), bucket_width: '1h' };
    expect(
      (
        await usagePage(store.reads, {
          startMs: day0,
          endMs: day0 + dayMs,
          width: '1h',
          groupBy: ['account_id', 'model'],
          limit: 24,
        })
      ).data,
    ).toEqual([
      bucket(day0, hourMs, [result(2, 1, 'echo'), result(1, 2, 'echo')]),
      bucket(day0 + hourMs, hourMs, [result(1, 1, 'small')]),
    ]);
    expect(await usageRoute({ ...query, group_by: 'model' }, store)).toMatchObject({
      data: [
        bucket(day0, hourMs, [result(3, null, 'echo')]),
        bucket(day0 + hourMs, hourMs, [result(1, null, 'small')]),
      ],
    });
    expect(await usageRoute({ ...query, 'group_by[]': ['account_id'] }, store)).toMatchObject({
      data: [
        bucket(day0, hourMs, [result(2, 1, null), result(1, 2, null)]),
        bucket(day0 + hourMs, hourMs, [result(1, 1, null)]),
      ],
    });
  });

  it('snaps start_time down to its bucket and stops before end_time', async () => {
    const store = await seeded();
    // From mid-day 0 by day: the whole of day 0 counts; day 3 is past the end.
    const page = await usageRoute(
      { start_time: String(s(day0 + 12 * hourMs)), end_time: String(s(day0 + 2 * dayMs)) },
      store,
    );
    expect(page).toMatchObject({
      data: [bucket(day0, dayMs, [result(4, null, null)]), bucket(day0 + dayMs, dayMs, [result(1, null, null)])],
    });
  });

  it('gives limit buckets with use a page and a next_page cursor that continues where it stopped, until has_more is false', async () => {
    const store = await seeded();
    const query = { start_time: String(s(day0)), limit: '1', group_by: 'account_id' };
    const starts: number[] = [];
    let page = await usageRoute(query, store);
    for (let i = 0; i < 10; i++) {
      if (!('data' in page)) throw page;
      expect(page.data).toHaveLength(1);
      starts.push(page.data[0]?.start_time as number);
      if (!page.has_more) break;
      expect(page.next_page).toMatch(/^page_/);
      page = await usageRoute({ ...query, page: page.next_page as string }, store);
    }
    expect(starts).toEqual([s(day0), s(day0 + dayMs), s(day0 + 3 * dayMs)]);
    expect(page).toMatchObject({ has_more: false, next_page: null });
  });

  it('keeps only the accounts and models asked for with account_ids and models', async () => {
    const store = await seeded();
    expect(
      await usageRoute({ start_time: String(s(day0)), account_ids: accountId(2), models: 'echo,small' }, store),
    ).toMatchObject({
      data: [bucket(day0, dayMs, [result(1, null, null)]), bucket(day0 + dayMs, dayMs, [result(1, null, null)])],
    });
  });

  it.each([
    [{}, 'start_time', 'start_time is required'],
    [{ start_time: 'yesterday' }, 'start_time', 'start_time must be a whole number of seconds since 1970 (Unix time)'],
    [
      { start_time: '253402300800' },
      'start_time',
      'start_time must be at most 253402300799 (the end of the year 9999)',
    ],
    [{ start_time: '100', end_time: '100' }, 'end_time', 'end_time must be after start_time'],
    [{ start_time: '100', bucket_width: '1m' }, 'bucket_width', 'bucket_width must be 1h or 1d'],
    [{ start_time: '100', limit: '32' }, 'limit', 'limit must be between 1 and 31 for bucket_width 1d'],
    [
      { start_time: '100', bucket_width: '1h', limit: '169' },
      'limit',
      'limit must be between 1 and 168 for bucket_width 1h',
    ],
    [{ start_time: '100', limit: '0' }, 'limit', 'limit must be between 1 and 31 for bucket_width 1d'],
    [{ start_time: '100', group_by: 'project_id' }, 'group_by', 'group_by must be account_id, model or both'],
    [
      { start_time: '100', group_by: 'model,model' },
      'group_by',
      'group_by lists account_id and model at most once each',
    ],
    [
      { start_time: '100', page: 'page_bm90IG91cnM' },
      'page',
      'page is not a page cursor this server gave for this query',
    ],
    [{ start_time: '100', project_ids: 'proj_1' }, 'project_ids', 'project_ids is not a parameter of the usage API'],
    [
      { start_time: '100', models: Array.from({ length: 101 }, (_, i) => `m${i}`).join(',') },
      'models',
      'models must list at most 100 ids',
    ],
    [{ start_time: '100', account_ids: 'a'.repeat(201) }, 'account_ids', 'account_ids must be at most 200 characters'],
  ])('refuses %j naming the parameter', async (query, param, message) => {
    const store = openStoreOf('memory');
    const refused = await usageRoute(query, store);
    expect(refused).toMatchObject({ _tag: 'InvalidRequest', message, details: { param } });
  });

  it('refuses a cursor of another query: one before start_time’s bucket or not on the bucket grid', async () => {
    const store = await seeded();
    const first = await usageRoute({ start_time: String(s(day0)), limit: '1' }, store);
    if (!('next_page' in first) || first.next_page === null) throw new Error('expected a next page');
    const cursor = first.next_page;
    expect(await usageRoute({ start_time: String(s(day0 + 2 * dayMs)), page: cursor }, store)).toMatchObject({
      details: { param: 'page' },
    });
    expect(
      await usageRoute({ start_time: String(s(day0)), end_time: String(s(day0 + dayMs)), page: cursor }, store),
    ).toMatchObject({ details: { param: 'page' } });
  });
});
