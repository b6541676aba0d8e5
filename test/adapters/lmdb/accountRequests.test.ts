import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { type LmdbStore, openLmdbStore } from '../../../src/adapters/lmdb/LmdbStore.js';
import { accountRequestsIndexedKey } from '../../../src/adapters/lmdb/migrations.js';
import { verifyViews } from '../../../src/adapters/lmdb/verify.js';
import type { Command } from '../../../src/domain/commands.js';
import { submitCommand } from '../../support/commands.js';
import { tempDataDir } from '../../support/testApp.js';

const hour = 3_600_000;
const ttlMs = 24 * hour;

const submit = (reqId: string, accountId: string, now: number): Command =>
  submitCommand(reqId, now, { accountId, ttlMs });
const expire = (reqId: string, now: number): Command => ({ type: 'Expire', reqId, now });
const start = (reqId: string, now: number): Command => ({ type: 'StartAttempt', reqId, now });
const complete = (reqId: string, now: number): Command => ({
  type: 'RecordSuccess',
  reqId,
  responseChars: 3,
  response: 'bye',
  now,
});

const idsOf = (rows: readonly { context: { reqId: string } }[]) => rows.map((row) => row.context.reqId);

describe("The LMDB store's index of an account's requests by creation time (idx.accountRequests)", () => {
  let store: LmdbStore;
  let dir: string;
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const open = () => {
    dir = tempDataDir('airs-account-requests');
    store = openLmdbStore(dir);
  };
  const index = () => Array.from(store.databases.indexes.accountRequests.getKeys({}));

  it('holds a request from its RequestQueued until its RequestExpired, whatever happens in between', async () => {
    open();
    await store.commit({ commands: [submit('req_a', 'acct_1', 1_000), submit('req_b', 'acct_1', 2_000)] });
    expect(index()).toEqual([
      ['acct_1', 1_000, 'req_a'],
      ['acct_1', 2_000, 'req_b'],
    ]);
    await store.commit({ commands: [start('req_a', 3_000)] });
    await store.commit({ commands: [complete('req_a', 4_000)] });
    expect(index()).toHaveLength(2);
    await store.commit({ commands: [expire('req_a', 1_000 + ttlMs)] });
    expect(index()).toEqual([['acct_1', 2_000, 'req_b']]);
    expect(verifyViews(store.databases).differences).toEqual([]);
  });

  it('adds one put per submit and one remove per expiry to the batch, and nothing for the changes between', async () => {
    open();
    const db = store.databases.indexes.accountRequests;
    const calls: string[] = [];
    const put = db.put.bind(db);
    const remove = db.remove.bind(db);
    db.put = ((...args: Parameters<typeof put>) => {
      calls.push('put');
      return put(...args);
    }) as typeof db.put;
    db.remove = ((...args: Parameters<typeof remove>) => {
      calls.push('remove');
      return remove(...args);
    }) as typeof db.remove;
    await store.commit({ commands: [submit('req_a', 'acct_1', 1_000)] });
    expect(calls).toEqual(['put']);
    await store.commit({ commands: [start('req_a', 2_000)] });
    await store.commit({ commands: [complete('req_a', 3_000)] });
    expect(calls).toEqual(['put']);
    await store.commit({ commands: [expire('req_a', 1_000 + ttlMs)] });
    expect(calls).toEqual(['put', 'remove']);
  });

  it('pages newest first by a cursor, within the limit, without mixing accounts', async () => {
    open();
    // Two requests in the same millisecond (ordered by id), and another account's requests in between.
    const mine = ['req_1', 'req_2', 'req_3', 'req_4', 'req_5'];
    const times = [1_000, 2_000, 2_000, 3_000, 4_000];
    await store.commit({
      commands: [
        ...mine.map((reqId, i) => submit(reqId, 'acct_a', times[i] as number)),
        submit('req_x', 'acct_b', 2_500),
        submit('req_y', 'acct_ab', 3_500),
        submit('req_z', 'acct_', 5_000),
      ],
    });
    const first = store.syncReads.requestsOf('acct_a', { limit: 2 });
    expect(idsOf(first)).toEqual(['req_5', 'req_4']);
    const cursor = (rows: typeof first) => {
      const last = rows.at(-1)?.context;
      return last === undefined ? undefined : { createdAt: last.createdAt, reqId: last.reqId };
    };
    const second = store.syncReads.requestsOf('acct_a', { before: cursor(first), limit: 2 });
    expect(idsOf(second)).toEqual(['req_3', 'req_2']);
    const third = store.syncReads.requestsOf('acct_a', { before: cursor(second), limit: 2 });
    expect(idsOf(third)).toEqual(['req_1']);
    expect(store.syncReads.requestsOf('acct_a', { before: cursor(third), limit: 2 })).toEqual([]);
    expect(idsOf(store.syncReads.requestsOf('acct_a', { limit: 100 }))).toEqual([...mine].reverse());
    expect(idsOf(store.syncReads.requestsOf('acct_b', { limit: 100 }))).toEqual(['req_x']);
    expect(idsOf(store.syncReads.requestsOf('acct_', { limit: 100 }))).toEqual(['req_z']);
    expect(store.syncReads.requestsOf('acct_none', { limit: 100 })).toEqual([]);
    expect(store.syncReads.requestsOf('acct_a', { limit: 0 })).toEqual([]);
    // The rows are the requests' views.
    expect(first[0]).toMatchObject({ status: 'waiting', context: { accountId: 'acct_a', createdAt: 4_000 } });
  });

  it('pages back towards the newest after a cursor: the rows just newer than it, newest first, without mixing accounts', async () => {
    open();
    const mine = ['req_1', 'req_2', 'req_3', 'req_4', 'req_5'];
    const times = [1_000, 2_000, 2_000, 3_000, 4_000];
    await store.commit({
      commands: [
        ...mine.map((reqId, i) => submit(reqId, 'acct_a', times[i] as number)),
        submit('req_y', 'acct_ab', 3_500),
        submit('req_z', 'acct_', 500),
      ],
    });
    const at = (reqId: string) => ({ createdAt: times[mine.indexOf(reqId)] as number, reqId });
    expect(idsOf(store.syncReads.requestsOf('acct_a', { after: at('req_1'), limit: 2 }))).toEqual(['req_3', 'req_2']);
    expect(idsOf(store.syncReads.requestsOf('acct_a', { after: at('req_3'), limit: 2 }))).toEqual(['req_5', 'req_4']);
    expect(idsOf(store.syncReads.requestsOf('acct_a', { after: at('req_4'), limit: 2 }))).toEqual(['req_5']);
    expect(store.syncReads.requestsOf('acct_a', { after: at('req_5'), limit: 2 })).toEqual([]);
    // A cursor older than every row: the oldest ones.
    expect(idsOf(store.syncReads.requestsOf('acct_a', { after: { createdAt: 0, reqId: '' }, limit: 1 }))).toEqual([
      'req_1',
    ]);
  });

  it('counts requests per hour-long slice from the start time, each slice ending where the next begins', async () => {
    open();
    const from = 10 * hour;
    await store.commit({
      commands: [
        submit('req_early', 'acct_a', from - 1),
        submit('req_1', 'acct_a', from),
        submit('req_2', 'acct_a', from + hour - 1),
        submit('req_3', 'acct_a', from + hour),
        submit('req_4', 'acct_a', from + 2 * hour + 5),
        submit('req_5', 'acct_a', from + 2 * hour + 6),
        submit('req_6', 'acct_a', from + 2 * hour + 6),
        submit('req_late', 'acct_a', from + 3 * hour),
        submit('req_other', 'acct_b', from + 10),
      ],
    });
    expect(store.syncReads.requestCountsByHour('acct_a', from, 3)).toEqual([2, 1, 3]);
    expect(store.syncReads.requestCountsByHour('acct_b', from, 3)).toEqual([1, 0, 0]);
    expect(store.syncReads.requestCountsByHour('acct_a', from, 0)).toEqual([]);
    // Expired requests are no longer counted.
    await store.commit({ commands: [expire('req_1', from + ttlMs)] });
    expect(store.syncReads.requestCountsByHour('acct_a', from, 3)).toEqual([1, 1, 3]);
  });

  it('counts without reading any request record', async () => {
    open();
    await store.commit({ commands: [submit('req_1', 'acct_a', 1_000), submit('req_2', 'acct_a', 2_000)] });
    const requests = store.databases.requests as unknown as Record<string, unknown>;
    const names = ['get', 'getBinaryFast', 'getRange', 'getValues'];
    const saved = names.map((name) => requests[name]);
    for (const name of names)
      requests[name] = () => {
        throw new Error('a request record was read');
      };
    try {
      expect(store.syncReads.requestCountsByHour('acct_a', 0, 1)).toEqual([2]);
    } finally {
      names.forEach((name, i) => {
        requests[name] = saved[i];
      });
    }
  });

  it('is built once from the request records for a data directory written before it existed', async () => {
    open();
    await store.commit({
      commands: [
        submit('req_1', 'acct_a', 1_000),
        submit('req_2', 'acct_b', 2_000),
        submit('req_3', 'acct_a', 3_000),
        submit('req_gone', 'acct_a', 500),
      ],
    });
    await store.commit({ commands: [expire('req_gone', 500 + ttlMs)] });
    const built = index();
    expect(built).toHaveLength(3);
    // What an older airs left: no index, no marker.
    const dbs = store.databases;
    await dbs.root.transaction(() => {
      for (const key of dbs.indexes.accountRequests.getKeys({})) dbs.indexes.accountRequests.remove(key);
      dbs.meta.remove(accountRequestsIndexedKey);
    });
    expect(index()).toEqual([]);
    expect(verifyViews(dbs).differences).toContain('index accountRequests: 0 entries stored, the log gives 3');
    await store.close();

    store = openLmdbStore(dir);
    expect(index()).toEqual(built);
    expect(store.databases.meta.get(accountRequestsIndexedKey)).toBe(1);
    expect(idsOf(store.syncReads.requestsOf('acct_a', { limit: 10 }))).toEqual(['req_3', 'req_1']);
    expect(verifyViews(store.databases).differences).toEqual([]);

    // Once: with the marker present, an emptied index stays empty at the next open (verify would say so).
    await store.databases.indexes.accountRequests.remove(['acct_b', 2_000, 'req_2']);
    await store.close();
    store = openLmdbStore(dir);
    expect(index()).toHaveLength(2);
  });

  it('marks a new data directory as indexed at once', () => {
    open();
    expect(store.databases.meta.get(accountRequestsIndexedKey)).toBe(1);
  });

  it('is checked by replay --verify: a missing entry and one the log does not make are named', async () => {
    open();
    await store.commit({ commands: [submit('req_1', 'acct_a', 1_000), submit('req_2', 'acct_a', 2_000)] });
    const dbs = store.databases;
    expect(verifyViews(dbs).differences).toEqual([]);

    await dbs.indexes.accountRequests.remove(['acct_a', 1_000, 'req_1']);
    expect(verifyViews(dbs).differences).toEqual([
      'index accountRequests acct_a\u00011000\u0001req_1: produced by the log but not stored',
      'index accountRequests: 1 entries stored, the log gives 2',
    ]);

    await dbs.indexes.accountRequests.put(['acct_a', 1_000, 'req_1'], '');
    await dbs.indexes.accountRequests.put(['acct_a', 1_500, 'req_1'], '');
    await dbs.indexes.accountRequests.put(['acct_b', 9, 'req_9'], '');
    expect(verifyViews(dbs).differences).toEqual([
      'index accountRequests acct_a\u00011500\u0001req_1: stored but not produced by the log',
      'index accountRequests acct_b\u00019\u0001req_9: stored but not produced by the log',
      'index accountRequests: 4 entries stored, the log gives 2',
    ]);
  });
});
