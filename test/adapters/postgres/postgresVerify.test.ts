import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../../src/adapters/postgres/db.js';
import { openPostgresStore, type PostgresStore } from '../../../src/adapters/postgres/PostgresStore.js';
import { verifyPostgres } from '../../../src/adapters/postgres/verify.js';
import type { AccountCommand } from '../../../src/domain/account/decider.js';
import { lineRequestId } from '../../../src/domain/batch/lines.js';
import type { Command } from '../../../src/domain/commands.js';
import { accountCounter } from '../../../src/domain/processingCounters.js';
import {
  answer,
  ask,
  batchCommand,
  batchIdOf,
  batchRunner,
  createAccount,
  createBatch,
  createFile,
  createKey,
  fileCommand,
  fileIdOf,
  lineSubmit,
  oneToN,
  policy,
  queueOf,
  startBatch,
  submit,
  takeBatch,
} from '../../contract/fixtures.js';
import { stopTestCluster, testCluster } from '../../support/postgres.js';

/**
 * `airs replay --verify` on PostgreSQL: a store written as the server writes it verifies clean, and each thing broken
 * by hand with SQL (one at a time) is named. A throwaway cluster of the system's binaries (test/support/postgres.ts).
 */

beforeAll(() => testCluster().then(() => {}), 120_000);
afterAll(() => stopTestCluster(), 60_000);

const owner = 'node_a';
const account = (command: AccountCommand): Command => ({ type: 'Account', accountId: 'acct_1', command });
const start = (reqId: string, now: number): Command => ({ type: 'StartAttempt', reqId, now, owner, leaseMs: 30_000 });

describe('replay --verify on a PostgreSQL store (every view rebuilt from the events table and compared)', () => {
  let store: PostgresStore;
  let url: string;

  /**
   * Two accounts (one with a password, a session open and one ended, a named key, a revoked key), and requests in
   * every state: waiting (with an idempotency key), processing under a lease, waiting for a retry, completed with
   * usage, failed, cancelled, expired (its idempotency key since taken by a newer request).
   */
  beforeEach(async () => {
    url = await (await testCluster()).createDatabase();
    store = await openPostgresStore(url, { maxConnections: 4 });
    const commit = async (...commands: Command[]) => {
      const outcomes = await store.commit({ commands });
      for (const outcome of outcomes) if (outcome instanceof Error || 'reason' in outcome) throw outcome;
    };
    await commit(
      createAccount(1),
      account({ type: 'ChangePlan', plan: 'starter', now: 2 }),
      createKey(1, 'key_1'),
      createKey(1, 'key_2'),
      createAccount(2),
      createKey(2, 'key_3'),
    );
    await commit(
      account({ type: 'SetPassword', passwordHash: 'scrypt$hash', now: 3 }),
      account({
        type: 'StartSession',
        sessionId: 'sess_1',
        secretHash: 'secret-1',
        expiresAt: 100_000,
        checkedPasswordHash: 'scrypt$hash',
        now: 4,
      }),
      account({
        type: 'StartSession',
        sessionId: 'sess_2',
        secretHash: 'secret-2',
        expiresAt: 100_000,
        checkedPasswordHash: 'scrypt$hash',
        now: 4,
      }),
    );
    const key2 = await store.reads.key('key_2');
    const session2 = await store.reads.session('sess_2');
    if (key2 === undefined || session2 === undefined) throw new Error('the fixture lost key_2 or sess_2');
    await commit(
      account({ type: 'RevokeKey', key: key2, now: 5 }),
      account({ type: 'EndSession', sessionId: 'sess_2', session: session2, now: 5 }),
    );
    await commit(
      submit('req_waiting', { key: { key: 'k-1', body: 'one' } }),
      submit('req_processing'),
      submit('req_retry'),
      submit('req_completed', { account: 2 }),
      submit('req_failed', { maxAttempts: 1 }),
      submit('req_cancelled'),
      submit('req_expired', { ttlMs: 100, key: { key: 'k-reused', body: 'old' } }),
    );
    await commit(start('req_processing', 1_100), start('req_retry', 1_100), start('req_completed', 1_100));
    await commit(start('req_failed', 1_100), { type: 'Cancel', reqId: 'req_cancelled', now: 1_100 });
    await commit(
      { type: 'RecordFailure', reqId: 'req_retry', reason: 'upstream 503', policy, now: 1_200, owner, attempt: 1 },
      { type: 'RecordFailure', reqId: 'req_failed', reason: 'upstream 400', policy, now: 1_200, owner, attempt: 1 },
      {
        type: 'RecordSuccess',
        reqId: 'req_completed',
        responseChars: 3,
        response: 'bye',
        inputTokens: 3,
        outputTokens: 5,
        now: 1_300,
        owner,
        attempt: 1,
      },
      { type: 'Expire', reqId: 'req_expired', now: 2_000 },
    );
    await commit(submit('req_reusing', { now: 2_000, key: { key: 'k-reused', body: 'new' } }));
    await store.commit({ commands: [], keyUses: [{ keyId: 'key_1', at: 2_100 }] });
    const statuses = await store.db.query<{ req_id: string; status: string }[]>(sql`
      SELECT req_id, status FROM requests ORDER BY req_id`);
    expect(Object.fromEntries(statuses.map((row) => [row.req_id, row.status]))).toEqual({
      req_cancelled: 'cancelled',
      req_completed: 'completed',
      req_expired: 'expired',
      req_failed: 'failed',
      req_processing: 'processing',
      req_retry: 'waiting',
      req_reusing: 'waiting',
      req_waiting: 'waiting',
    });
  }, 60_000);

  afterEach(async () => {
    await store.close();
    await (await testCluster()).dropDatabase(url);
  });

  const differences = async () => (await verifyPostgres(store.db)).differences;
  /** Breaks the store with one SQL statement, then verifies it. */
  const afterBreaking = async (statement: string) => {
    await store.db.query({ text: statement, values: [] });
    return differences();
  };

  it('finds nothing to report in what the store wrote, and counts what it folded', async () => {
    const report = await verifyPostgres(store.db);
    expect(report.differences).toEqual([]);
    const [events] = await store.db.query<{ n: number }[]>(sql`SELECT count(*)::int AS n FROM events`);
    expect(report).toMatchObject({ events: events?.n, requests: 8, accounts: 2, keys: 3 });
    // Something in every table it compares, so the clean answer says something.
    for (const table of [
      'accounts',
      'keys',
      'key_hashes',
      'emails',
      'sessions',
      'credentials',
      'idempotency',
      'queued_counts',
      'processing_counts',
      'usage_daily',
      'key_last_used',
    ]) {
      const [row] = await store.db.query({ text: `SELECT count(*)::int AS n FROM ${table}`, values: [] });
      expect(row?.n, table).toBeGreaterThan(0);
    }
  });

  it('finds nothing to report when each page holds only two events or rows, so requests span pages', async () => {
    expect((await verifyPostgres(store.db, { pageSize: 2 })).differences).toEqual([]);
  });

  it('finds nothing to report while another node keeps writing (it reads one snapshot)', async () => {
    const other = await openPostgresStore(url, { maxConnections: 2 });
    try {
      let writing = true;
      const writes = (async () => {
        for (let n = 0; writing; n++)
          await other.commit({ commands: [submit(`req_more_${n}`, { now: 3_000 + n, account: 2 })] });
      })();
      const reports = [];
      for (let i = 0; i < 3; i++) reports.push(await verifyPostgres(store.db, { pageSize: 2 }));
      writing = false;
      await writes;
      expect(reports.map((report) => report.differences)).toEqual([[], [], []]);
      expect((await verifyPostgres(store.db)).requests).toBeGreaterThan(8);
    } finally {
      await other.close();
    }
  });

  it('names a request whose stored view has another status than the fold of its events', async () => {
    expect(
      await afterBreaking(
        `UPDATE requests SET state = jsonb_set(state::jsonb, '{status}', '"failed"')::json WHERE req_id = 'req_completed'`,
      ),
    ).toEqual(["request req_completed: the stored view differs from the log's"]);
  });

  it('names a request whose status column (what the dispatch index is over) differs from its fold', async () => {
    expect(await afterBreaking(`UPDATE requests SET status = 'failed' WHERE req_id = 'req_waiting'`)).toEqual([
      'request req_waiting: column status stored "failed", the log gives "waiting"',
    ]);
  });

  it('names a request missing from the processing index (its lease column emptied)', async () => {
    expect(await afterBreaking(`UPDATE requests SET lease_until = NULL WHERE req_id = 'req_processing'`)).toEqual([
      'request req_processing: column lease_until stored null, the log gives 31100',
    ]);
  });

  it('names a missing index row: an email, a key hash, an idempotency entry', async () => {
    expect(await afterBreaking(`DELETE FROM emails WHERE email = 'user2@example.com'`)).toEqual([
      'index emails user2@example.com: produced by the log but not stored',
    ]);
    expect(await afterBreaking(`DELETE FROM key_hashes WHERE key_id = 'key_3'`)).toEqual([
      'index emails user2@example.com: produced by the log but not stored',
      'index keyHashes hash_key_3: produced by the log but not stored',
    ]);
    expect(await afterBreaking(`DELETE FROM idempotency WHERE key = 'k-reused'`)).toContain(
      'index idempotency acct_1\u0001k-reused: produced by the log but not stored',
    );
  });

  it('names an idempotency entry that names the older request its key was taken from', async () => {
    expect(await afterBreaking(`UPDATE idempotency SET req_id = 'req_expired' WHERE key = 'k-reused'`)).toEqual([
      "index idempotency acct_1\u0001k-reused: the stored value differs from the log's",
    ]);
  });

  it('names a counter off by one: queued requests of an account, requests processed of a model and of an account', async () => {
    expect(await afterBreaking(`UPDATE queued_counts SET count = count + 1 WHERE account_id = 'acct_1'`)).toEqual([
      "queued count of account acct_1: the stored value differs from the log's",
    ]);
    await store.db.query(sql`UPDATE queued_counts SET count = count - 1 WHERE account_id = 'acct_1'`);
    expect(await afterBreaking(`UPDATE processing_counts SET count = count - 1 WHERE counter = 'echo'`)).toEqual([
      'processing count echo: produced by the log but not stored',
    ]);
    await store.db.query(sql`UPDATE processing_counts SET count = count + 1 WHERE counter = 'echo'`);
    expect(
      await afterBreaking(`UPDATE processing_counts SET count = count + 1 WHERE counter = chr(31) || 'acct_1'`),
    ).toEqual([`processing count ${accountCounter('acct_1')}: the stored value differs from the log's`]);
  });

  it('names a key row that no event made, and the entry of the account index over it', async () => {
    expect(
      await afterBreaking(
        `INSERT INTO keys (key_id, account_id, state) SELECT 'key_9', account_id, state FROM keys WHERE key_id = 'key_1'`,
      ),
    ).toEqual([
      'key key_9: stored but not produced by the log',
      'index accountKeys acct_1\u0001key_9: stored but not produced by the log',
    ]);
  });

  it('names a day of usage moved to another day, and tokens off by one', async () => {
    expect(await afterBreaking(`UPDATE usage_daily SET day = day + 86400000`)).toEqual([
      'daily usage acct_2\u000186400000: stored but not produced by the log',
      'daily usage acct_2\u00010: produced by the log but not stored',
    ]);
    await store.db.query(sql`UPDATE usage_daily SET day = day - 86400000, input_tokens = input_tokens + 1`);
    expect(await differences()).toEqual(["daily usage acct_2\u00010: the stored value differs from the log's"]);
  });

  it('names a request row missing, and one stored that the log never made', async () => {
    await store.db.query(sql`INSERT INTO requests SELECT 'req_ghost', account_id, status, model, created_at, available_at,
      expires_at, lease_until, state, text FROM requests WHERE req_id = 'req_waiting'`);
    expect(await afterBreaking(`DELETE FROM requests WHERE req_id = 'req_cancelled'`)).toEqual([
      'request req_cancelled: produced by the log but not stored',
      'request req_ghost: stored but not produced by the log',
    ]);
    await store.db.query(sql`DELETE FROM requests WHERE req_id = 'req_ghost'`);
    expect(await differences()).toEqual([
      'request req_cancelled: produced by the log but not stored',
      'requests: 7 rows stored, the log gives 8',
    ]);
  });

  it('notices text missing while a request waits, and text kept after it failed', async () => {
    expect(
      await afterBreaking(`UPDATE requests SET text = NULL WHERE req_id = 'req_retry';
        UPDATE requests SET text = 'x'::bytea WHERE req_id = 'req_failed'`),
    ).toEqual([
      'request req_failed: a text stored while it is failed',
      'request req_retry: no text stored while it is waiting',
    ]);
  });

  it('names a session, a credential and the accounts version that the log does not give', async () => {
    expect(
      await afterBreaking(`DELETE FROM sessions WHERE session_id = 'sess_1';
        INSERT INTO credentials (key, value) VALUES ('session:sess_2', 'secret-2');
        UPDATE log_head SET accounts_version = accounts_version + 1`),
    ).toEqual([
      'session sess_1: produced by the log but not stored',
      'index accountSessions acct_1\u0001sess_1: produced by the log but not stored',
      'credential session:sess_2: stored but the log sets no such credential',
      expect.stringMatching(/^log_head accounts_version: stored \d+ but the log gives \d+$/),
    ]);
  });

  it('names a gap in the events table and a head that says the log ends elsewhere', async () => {
    expect(await afterBreaking(`DELETE FROM events WHERE seq = 3`)).toEqual(
      expect.arrayContaining(['log: a gap: expected event 3, found 4']),
    );
    await store.db.query(sql`UPDATE log_head SET last_seq = last_seq + 1`);
    expect(await differences()).toEqual(
      expect.arrayContaining([expect.stringMatching(/^log_head last_seq: stored \d+ but the log ends at \d+$/)]),
    );
  });

  it('names an event the machine refuses, appended by hand to a request that completed', async () => {
    const [head] = await store.db.query<{ last_seq: number }[]>(sql`SELECT last_seq FROM log_head`);
    const seq = (head?.last_seq ?? 0) + 1;
    const event = { type: 'RequestQueued', reqId: 'req_completed', accountId: 'acct_2', keyId: 'key_3', model: 'echo' };
    await store.db.query(
      sql`INSERT INTO events (seq, payload) VALUES (${seq}, ${JSON.stringify({ ...event, promptChars: 5, at: 5_000, expiresAt: 65_000, seq })}::text::json)`,
    );
    await store.db.query(sql`UPDATE log_head SET last_seq = ${seq}`);
    expect(await differences()).toEqual([`event ${seq}: RequestQueued is not accepted by the machine`]);
  });
});

describe('replay --verify on a PostgreSQL store with batches and files', () => {
  let store: PostgresStore;
  let url: string;
  const batchId = batchIdOf(1);
  const line = (n: number) => lineRequestId(batchId, n);

  /**
   * A batch in progress with four lines (one completed with usage, one failed, one cancelled, one waiting in its
   * batch lane), a batch whose validation failed (ended), a file kept, a file deleted, an output file of another
   * account, and an upload streaming (its reservation held).
   */
  beforeEach(async () => {
    url = await (await testCluster()).createDatabase();
    store = await openPostgresStore(url, { maxConnections: 4 });
    const commit = async (...commands: Command[]) => {
      const outcomes = await store.commit({ commands });
      for (const outcome of outcomes) if (outcome instanceof Error) throw outcome;
    };
    await commit(
      createAccount(1),
      createFile(fileIdOf(1)),
      createFile(fileIdOf(2)),
      createFile(fileIdOf(3), { account: 2, purpose: 'batch_output' }),
      fileCommand(fileIdOf(2), { type: 'DeleteFile', accountId: 'acct_1', now: 150 }),
      fileCommand(fileIdOf(5), {
        type: 'StartUpload',
        accountId: 'acct_1',
        bytes: 500,
        shrinkToRoom: false,
        now: 160,
        heldUntil: 60_160,
        maxStoredBytes: 10_000,
        maxFiles: 10,
        maxConcurrentUploads: 2,
      }),
      createBatch(batchId, fileIdOf(1)),
      createBatch(batchIdOf(2), fileIdOf(1)),
      takeBatch(batchId),
      takeBatch(batchIdOf(2)),
    );
    await commit(
      startBatch(batchId, 4),
      batchCommand(batchIdOf(2), { type: 'FailValidation', owner: batchRunner, errors: '[]', now: 500 }),
    );
    await commit(...oneToN(4).map((n) => lineSubmit(batchId, n)));
    const queue = queueOf(store);
    const [first, second] = (await queue.claim(ask('A', 2_000, { max: 2 }))).started;
    if (first === undefined || second === undefined) throw new Error('two lines should have started');
    expect(await queue.recordSuccess({ ...first, owner: 'A' }, answer('done'), 2_100)).toBe('recorded');
    const once = { ...policy, maxAttempts: 1 };
    expect(await queue.recordFailure({ ...second, owner: 'A' }, 'upstream 400', once, 2_100)).toBe('recorded');
    await commit({ type: 'Cancel', reqId: line(3), now: 2_200 });
    expect(await store.reads.batch(batchId)).toMatchObject({
      state: { status: 'in_progress' },
      counts: { queued: 4, completed: 1, failed: 2, inputTokens: 3, outputTokens: 5 },
    });
    expect(await store.reads.request(line(4))).toMatchObject({ status: 'waiting' });
  }, 60_000);

  afterEach(async () => {
    await store.close();
    await (await testCluster()).dropDatabase(url);
  });

  const afterBreaking = async (statement: string) => {
    await store.db.query({ text: statement, values: [] });
    return (await verifyPostgres(store.db)).differences;
  };

  it('finds nothing to report in what the store wrote, in pages of two too', async () => {
    expect((await verifyPostgres(store.db)).differences).toEqual([]);
    expect((await verifyPostgres(store.db, { pageSize: 2 })).differences).toEqual([]);
    const [rows] = await store.db.query<{ batches: number; files: number }[]>(sql`
      SELECT (SELECT count(*)::int FROM batches) AS batches, (SELECT count(*)::int FROM files) AS files`);
    expect(rows).toEqual({ batches: 2, files: 2 });
  });

  it("names a batch whose lines' counts are off by one", async () => {
    expect(
      await afterBreaking(
        `UPDATE batches SET state = jsonb_set(state::jsonb, '{counts,completed}', '2')::json WHERE batch_id = '${batchId}'`,
      ),
    ).toEqual([`batch ${batchId}: the stored view differs from the log's`]);
  });

  it('names a batch missing from the open batches, and an ended one listed among them', async () => {
    expect(
      await afterBreaking(`UPDATE batches SET open = NOT open;
        UPDATE batches SET created_at = 7 WHERE batch_id = '${batchIdOf(2)}'`),
    ).toEqual(
      expect.arrayContaining([
        `batch ${batchId}: column open stored false, the log gives true`,
        `batch ${batchIdOf(2)}: column open stored true, the log gives false`,
        `batch ${batchIdOf(2)}: column created_at stored 7, the log gives 200`,
      ]),
    );
  });

  it('names a batch whose input file column (what the index of the files open batches read is over) differs from its view', async () => {
    expect(
      await afterBreaking(`UPDATE batches SET input_file_id = 'file-other' WHERE batch_id = '${batchId}'`),
    ).toEqual([
      expect.stringMatching(new RegExp(`^batch ${batchId}: column input_file_id stored "file-other", the log gives "`)),
    ]);
  });

  it('names a file row missing, and a deleted file still stored', async () => {
    expect(
      await afterBreaking(`DELETE FROM files WHERE file_id = '${fileIdOf(1)}';
        INSERT INTO files (file_id, account_id, created_at, purpose, state)
          SELECT '${fileIdOf(2)}', account_id, created_at, purpose, state FROM files WHERE file_id = '${fileIdOf(3)}'`),
    ).toEqual([
      `file ${fileIdOf(2)}: stored but not produced by the log`,
      `file ${fileIdOf(1)}: produced by the log but not stored`,
    ]);
  });

  it("names an account's count of open batches, and of bytes of files kept, that differ from the log's", async () => {
    expect(
      await afterBreaking(`UPDATE account_counts SET count = count + 1 WHERE counter = 'batches' || chr(31) || 'acct_1';
        DELETE FROM account_counts WHERE counter = 'fileBytes' || chr(31) || 'acct_2'`),
    ).toEqual([
      'account count batches of acct_1: stored 2 but the log gives 1',
      'account count fileBytes of acct_2: stored 0 but the log gives 1234',
    ]);
  });

  it("names an account's uploads missing or changed, and a count of its files off by one", async () => {
    expect(
      await afterBreaking(`UPDATE account_counts SET count = count + 1 WHERE counter = 'files' || chr(31) || 'acct_1';
        UPDATE file_uploads SET uploads = '[]' WHERE account_id = 'acct_1';
        INSERT INTO file_uploads (account_id, uploads) VALUES ('acct_2', '[]')`),
    ).toEqual([
      'account count files of acct_1: stored 2 but the log gives 1',
      "uploads of acct_1: the stored value differs from the log's",
      'uploads of acct_2: stored but the log leaves none',
    ]);
    expect(await afterBreaking('DELETE FROM file_uploads')).toEqual([
      'account count files of acct_1: stored 2 but the log gives 1',
      'uploads of acct_1: the log leaves some but none are stored',
    ]);
  });

  it("names a waiting line out of its account's batch lane (in its account's own)", async () => {
    expect(await afterBreaking(`UPDATE requests SET lane = account_id WHERE req_id = '${line(4)}'`)).toEqual([
      `request ${line(4)}: column lane stored "acct_1", the log gives "acct_1\\u001fbatch"`,
    ]);
  });

  it('names a batch event the batch machine refuses, appended by hand', async () => {
    const [head] = await store.db.query<{ last_seq: number }[]>(sql`SELECT last_seq FROM log_head`);
    const seq = (head?.last_seq ?? 0) + 1;
    const event = { type: 'BatchStarted', batchId: batchIdOf(2), owner: batchRunner, total: 1, at: 600, seq };
    await store.db.query(sql`INSERT INTO events (seq, payload) VALUES (${seq}, ${JSON.stringify(event)}::text::json)`);
    await store.db.query(sql`UPDATE log_head SET last_seq = ${seq}`);
    expect((await verifyPostgres(store.db)).differences).toEqual([
      `event ${seq}: BatchStarted is not accepted by the batch machine`,
    ]);
  });
});
