import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { sql } from '../../../src/adapters/postgres/db.js';
import { openPostgresStore, type PostgresStore } from '../../../src/adapters/postgres/PostgresStore.js';
import { lockSpace, migrations, schemaVersion } from '../../../src/adapters/postgres/schema.js';
import { verifyPostgres } from '../../../src/adapters/postgres/verify.js';
import { openBatchesCounter, storedBytesCounter, storedFilesCounter } from '../../../src/domain/accountCounters.js';
import { lineRequestId } from '../../../src/domain/batch/lines.js';
import type { Command } from '../../../src/domain/commands.js';
import { AccountLimitReached } from '../../../src/domain/errors.js';
import { accountCounter, accountModelCounter, countersOf } from '../../../src/domain/processingCounters.js';
import { isRequestEvent, type RequestEvent } from '../../../src/domain/request/events.js';
import { foldRequest, isQueued } from '../../../src/domain/request/state.js';
import {
  ask,
  batchCommand,
  batchIdOf,
  batchRunner,
  commitOne,
  createAccount,
  createBatch,
  createFile,
  eventsOf,
  eventually,
  fileCommand,
  fileIdOf,
  lineSubmit,
  oneToN,
  queueOf,
  replay,
  startBatch,
  submit,
  takeBatch,
} from '../../contract/fixtures.js';
import { binDir, stopTestCluster, testCluster } from '../../support/postgres.js';

/**
 * What the PostgreSQL store does beyond the storage contract (test/contract/postgres.test.ts): its connections'
 * durability whatever the server's default, its schema's versions, text PostgreSQL's `text` could not hold, a long log
 * read in pages, and hearing commits again after its listening connection was cut.
 */

const opened: PostgresStore[] = [];
const open = async (url?: string) => {
  const store = await openPostgresStore(url ?? (await (await testCluster()).createDatabase()), { maxConnections: 3 });
  opened.push(store);
  return store;
};

/** Two stores on `url`, the first listening (counting what it is told), once it has heard a commit of the second. */
const listeningPair = async (url: string) => {
  const listening = await open(url);
  const writing = await open(url);
  let told = 0;
  const stop = listening.reads.onChange(() => told++);
  await commitOne(writing, submit('req_a'));
  await eventually(() => told > 0, 10_000, 'the first commit was heard');
  return { listening, writing, heard: () => told, stop };
};

/** The migration that brought dispatch lanes, batches and files (the schema before it is the one upgraded from). */
const lanesVersion = migrations.findIndex((text) => text.includes('ADD COLUMN lane')) + 1;
/** Takes a database back to the schema before lanes, as that schema left it: no lane, the dispatch index over the
 * account, no batches or files (nor the accounts' counts of them, of the version after). */
const undoLanes = (store: PostgresStore) =>
  store.db.query({
    text: `DROP INDEX requests_dispatch;
      ALTER TABLE requests DROP COLUMN lane;
      CREATE INDEX requests_dispatch ON requests (account_id, available_at, req_id) WHERE status = 'waiting';
      DROP TABLE batches;
      DROP TABLE files;
      DROP TABLE account_counts;
      DROP TABLE webhook_endpoints, webhook_deliveries;
      DROP TABLE file_uploads;`,
    values: [],
  });
/** The migration that brought webhook endpoints and deliveries, and its undoing (for the upgrades from before it). */
const webhooksVersion = migrations.findIndex((text) => text.includes('CREATE TABLE webhook_endpoints')) + 1;
const undoWebhooks = (store: PostgresStore) =>
  store.db.query({ text: 'DROP TABLE webhook_endpoints, webhook_deliveries', values: [] });
/** The migration that indexed the open batches by account and by input file (issue 40), and its undoing. */
const openBatchesVersion = migrations.findIndex((text) => text.includes('ADD COLUMN input_file_id')) + 1;
const undoOpenBatchIndexes = (store: PostgresStore) =>
  store.db.query({
    text: `DROP INDEX batches_open_inputs;
      DROP INDEX batches_open;
      ALTER TABLE batches DROP COLUMN input_file_id;
      CREATE INDEX batches_open ON batches (batch_id) WHERE open;`,
    values: [],
  });
/** The migration that bounded files per account (issue 40), and its undoing: no uploads' table, no index by purpose,
 * no counts of files. */
const fileBoundsVersion = migrations.findIndex((text) => text.includes('CREATE TABLE file_uploads')) + 1;
const undoFileBounds = (store: PostgresStore) =>
  store.db.query({
    text: `DROP TABLE file_uploads;
      DROP INDEX files_by_purpose;
      DELETE FROM account_counts WHERE counter LIKE 'files' || chr(31) || '%';`,
    values: [],
  });
/** The migration that counted batches' answers in their views and their accounts' stored bytes (issue 40). */
const answersVersion = migrations.findIndex((text) => text.includes('{counts,answerChars}')) + 1;
/** The migration that counted accounts' queued requests again without their batch lines (issue 41). */
const queuedCountVersion = migrations.findIndex((text) => text.includes('DELETE FROM queued_counts')) + 1;

// Databases and schemas made per test: seconds on a busy 2-core machine, beyond vitest's default of 5.
vi.setConfig({ testTimeout: 30_000, hookTimeout: 30_000 });
beforeAll(() => testCluster().then(() => {}), 120_000);
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
});
afterAll(() => stopTestCluster(), 60_000);

describe('The PostgreSQL test cluster', () => {
  it('fails, when the server programs are missing, with one line naming the command that installs them', () => {
    expect(() => binDir('/nonexistent/postgresql')).toThrow(/^[^\n]*apt-get install -y postgresql$/);
  });
});

describe('The PostgreSQL store', () => {
  it('commits with synchronous_commit on, though the server defaults to off', async () => {
    const store = await open();
    const cluster = await testCluster();
    const admin = new pg.Client({ connectionString: cluster.url() });
    await admin.connect();
    try {
      const { rows } = await admin.query(`SELECT setting FROM pg_settings WHERE name = 'synchronous_commit'`);
      expect(rows[0]?.setting).toBe('off');
    } finally {
      await admin.end();
    }
    // Every connection of the pool, also one opened after the others (several reads at once open them).
    const settings = await Promise.all(oneToN(3).map(() => store.db.query(sql`SHOW synchronous_commit`)));
    expect(settings.map(([row]) => row?.synchronous_commit)).toEqual(['on', 'on', 'on']);
    const inCommit = await store.db.begin((query) => query(sql`SHOW synchronous_commit`));
    expect(inCommit[0]?.synchronous_commit).toBe('on');
    // A node stopped inside a transaction (holding the log's writer lock) is ended by the server.
    const [idle] = await store.db.query(sql`SHOW idle_in_transaction_session_timeout`);
    expect(idle?.idle_in_transaction_session_timeout).toBe('15s');
  });

  it('makes its schema once when several nodes open a new database at once, and opens it again as it is', async () => {
    const url = await (await testCluster()).createDatabase();
    const stores = await Promise.all(oneToN(4).map(() => open(url)));
    const [version] = await stores[0]!.db.query(sql`SELECT version FROM airs_schema_version`);
    expect(version?.version).toBe(schemaVersion);
    await commitOne(stores[1]!, createAccount(1));
    const again = await open(url);
    expect(await again.reads.accountIdByEmail('user1@example.com')).toBe('acct_1');
  });

  it('refuses a database whose schema is newer than it knows, with one line', async () => {
    const url = await (await testCluster()).createDatabase();
    const first = await open(url);
    await first.db.query(sql`UPDATE airs_schema_version SET version = ${schemaVersion + 1}`);
    const refusal = await openPostgresStore(url).then(
      () => undefined,
      (error: Error) => error,
    );
    expect(refusal?.message).toMatch(
      new RegExp(`schema version ${schemaVersion + 1}, newer than this airs knows \\(${schemaVersion}\\)`),
    );
    expect(refusal?.message).not.toMatch(/\n/);
  });

  it('counts, when it upgrades a database of schema version 1, the requests being processed per account and per account and model', async () => {
    const url = await (await testCluster()).createDatabase();
    const store = await open(url);
    await store.commit({
      commands: [
        createAccount(1),
        ...oneToN(3).map((i) => submit(`req_${i}`, { now: 1_000 + i })),
        submit('req_x', { account: 2 }),
      ],
    });
    expect((await queueOf(store).claim(ask('A', 2_000, { max: 3 }))).started).toHaveLength(3);
    // As version 1 left it: counts per model only, under their old column (and what later versions made undone).
    await undoLanes(store);
    await store.db.query(sql`DELETE FROM processing_counts WHERE counter LIKE chr(31) || '%'`);
    await store.db.query({ text: 'ALTER TABLE processing_counts RENAME COLUMN counter TO model', values: [] });
    // Nor the tables of the versions after 2 (3: uploaded files' bytes).
    await store.db.query({ text: 'DROP TABLE file_parts, file_blobs', values: [] });
    await store.db.query(sql`UPDATE airs_schema_version SET version = 1`);
    await store.close();
    opened.splice(opened.indexOf(store), 1);

    const upgraded = await open(url);
    const rows = await upgraded.db.query<{ counter: string; count: string }[]>(
      sql`SELECT counter, count FROM processing_counts ORDER BY counter`,
    );
    expect(new Map(rows.map((row) => [row.counter, Number(row.count)]))).toEqual(
      new Map([
        ['echo', 3],
        [accountCounter('acct_1'), 2],
        [accountModelCounter('acct_1', 'echo'), 2],
        [accountCounter('acct_2'), 1],
        [accountModelCounter('acct_2', 'echo'), 1],
      ]),
    );
    expect((await verifyPostgres(upgraded.db)).differences).toEqual([]);
  });

  it("gives the requests waiting in a database of the schema before dispatch lanes their account's lane when it upgrades it, and claims them in turn", async () => {
    expect(lanesVersion).toBeGreaterThan(2);
    const url = await (await testCluster()).createDatabase();
    const store = await open(url);
    await store.commit({
      commands: [
        createAccount(1),
        createAccount(2),
        submit('req_1', { now: 1_001 }),
        submit('req_2', { account: 2, now: 1_002 }),
        submit('req_3', { now: 1_003 }),
        submit('req_4', { now: 1_004 }),
      ],
    });
    expect((await queueOf(store).claim(ask('A', 2_000, { max: 1 }))).started).toHaveLength(1);
    await undoLanes(store);
    await store.db.query(sql`UPDATE airs_schema_version SET version = ${lanesVersion - 1}`);
    await store.close();
    opened.splice(opened.indexOf(store), 1);

    const upgraded = await open(url);
    const rows = await upgraded.db.query<{ req_id: string; lane: string | null }[]>(
      sql`SELECT req_id, lane FROM requests ORDER BY req_id`,
    );
    expect(rows).toEqual([
      { req_id: 'req_1', lane: null },
      { req_id: 'req_2', lane: 'acct_2' },
      { req_id: 'req_3', lane: 'acct_1' },
      { req_id: 'req_4', lane: 'acct_1' },
    ]);
    const [index] = await upgraded.db.query<{ definition: string }[]>(
      sql`SELECT pg_get_indexdef('requests_dispatch'::regclass) AS definition`,
    );
    expect(index?.definition).toMatch(/\(lane, available_at, req_id\) WHERE \(status = 'waiting'::text\)$/);
    expect((await verifyPostgres(upgraded.db)).differences).toEqual([]);
    // Claimed as before: accounts in turn, each its earliest first.
    const claimed = await queueOf(upgraded).claim(ask('B', 3_000, { max: 10 }));
    expect(claimed.started.map((held) => held.reqId)).toEqual(['req_3', 'req_2', 'req_4']);
    // And the upgraded database keeps batches.
    await upgraded.commit({ commands: [createFile(fileIdOf(1)), createBatch(batchIdOf(1), fileIdOf(1))] });
    expect((await upgraded.reads.batch(batchIdOf(1)))?.state.status).toBe('validating');
    expect((await verifyPostgres(upgraded.db)).differences).toEqual([]);
  });

  it("counts each account's open batches and bytes of files kept when it upgrades a database of the schema before those counts", async () => {
    const countsVersion = migrations.findIndex((text) => text.includes('CREATE TABLE account_counts')) + 1;
    expect(countsVersion).toBe(webhooksVersion - 1);
    expect(webhooksVersion).toBe(openBatchesVersion - 1);
    expect(openBatchesVersion).toBe(fileBoundsVersion - 1);
    expect(fileBoundsVersion).toBe(answersVersion - 1);
    const url = await (await testCluster()).createDatabase();
    const store = await open(url);
    await store.commit({
      commands: [
        createFile(fileIdOf(1)),
        createFile(fileIdOf(2)),
        createFile(fileIdOf(3), { account: 2 }),
        fileCommand(fileIdOf(2), { type: 'DeleteFile', accountId: 'acct_1', now: 150 }),
        createBatch(batchIdOf(1), fileIdOf(1)),
        createBatch(batchIdOf(2), fileIdOf(1)),
        createBatch(batchIdOf(3), fileIdOf(1)),
        takeBatch(batchIdOf(3)),
      ],
    });
    await commitOne(
      store,
      batchCommand(batchIdOf(3), { type: 'FailValidation', owner: batchRunner, errors: '[]', now: 500 }),
    );
    const countsOf = async (of: PostgresStore) =>
      new Map(
        (
          await of.db.query<{ counter: string; count: number }[]>(
            sql`SELECT counter, count FROM account_counts ORDER BY counter`,
          )
        ).map((row) => [row.counter, Number(row.count)]),
      );
    const wanted = new Map([
      [openBatchesCounter('acct_1'), 2],
      [storedBytesCounter('acct_1'), 1_234],
      [storedBytesCounter('acct_2'), 1_234],
      [storedFilesCounter('acct_1'), 1],
      [storedFilesCounter('acct_2'), 1],
    ]);
    expect(await countsOf(store)).toEqual(wanted);
    // As the version before left it: no counts (nor the webhook tables of the version after).
    await undoFileBounds(store);
    await store.db.query({ text: 'DROP TABLE account_counts', values: [] });
    await undoOpenBatchIndexes(store);
    await undoWebhooks(store);
    await store.db.query(sql`UPDATE airs_schema_version SET version = ${countsVersion - 1}`);
    await store.close();
    opened.splice(opened.indexOf(store), 1);

    const upgraded = await open(url);
    expect(await countsOf(upgraded)).toEqual(wanted);
    expect((await verifyPostgres(upgraded.db)).differences).toEqual([]);
    // And the bound holds from them.
    const bounded = createBatch(batchIdOf(4), fileIdOf(1)) as Extract<Command, { type: 'Batch' }>;
    const [outcome] = await upgraded.commit({
      commands: [{ ...bounded, command: { ...bounded.command, maxInProgress: 2 } as typeof bounded.command }],
    });
    expect(outcome).toBeInstanceOf(AccountLimitReached);
  });

  it('indexes the open batches by account and by input file when it upgrades a database of the schema before them', async () => {
    const url = await (await testCluster()).createDatabase();
    const store = await open(url);
    await store.commit({
      commands: [
        createFile(fileIdOf(1)),
        createFile(fileIdOf(2), { account: 2 }),
        createBatch(batchIdOf(1), fileIdOf(1)),
        createBatch(batchIdOf(2), fileIdOf(1)),
        createBatch(batchIdOf(3), fileIdOf(2), { account: 2 }),
        takeBatch(batchIdOf(2)),
      ],
    });
    await commitOne(
      store,
      batchCommand(batchIdOf(2), { type: 'FailValidation', owner: batchRunner, errors: '[]', now: 500 }),
    );
    // As the version before left it: no input file column, the open batches indexed by id alone (nor the bounds of
    // files of the version after).
    await undoFileBounds(store);
    await undoOpenBatchIndexes(store);
    await store.db.query(sql`UPDATE airs_schema_version SET version = ${openBatchesVersion - 1}`);
    await store.close();
    opened.splice(opened.indexOf(store), 1);

    const upgraded = await open(url);
    expect(
      await upgraded.db.query<{ batch_id: string; input_file_id: string }[]>(
        sql`SELECT batch_id, input_file_id FROM batches ORDER BY batch_id`,
      ),
    ).toEqual([
      { batch_id: batchIdOf(1), input_file_id: fileIdOf(1) },
      { batch_id: batchIdOf(2), input_file_id: fileIdOf(1) },
      { batch_id: batchIdOf(3), input_file_id: fileIdOf(2) },
    ]);
    const [index] = await upgraded.db.query<{ definition: string }[]>(
      sql`SELECT pg_get_indexdef('batches_open'::regclass) AS definition`,
    );
    expect(index?.definition).toMatch(/\(account_id, batch_id\) WHERE open$/);
    expect((await verifyPostgres(upgraded.db)).differences).toEqual([]);
    expect(await upgraded.reads.openBatchAccounts(undefined, 10)).toEqual(['acct_1', 'acct_2']);
    expect(await upgraded.reads.openBatchesOf('acct_1', undefined, 10)).toEqual([batchIdOf(1)]);
    expect(await upgraded.reads.isOpenBatchInput(fileIdOf(2))).toBe(true);
    // A batch made after the upgrade has its input file in its row.
    await upgraded.commit({ commands: [createBatch(batchIdOf(4), fileIdOf(2), { account: 2 })] });
    expect(await upgraded.reads.openBatchesOf('acct_2', batchIdOf(3), 10)).toEqual([batchIdOf(4)]);
    expect((await verifyPostgres(upgraded.db)).differences).toEqual([]);
  });

  it("counts each account's files and indexes them by purpose when it upgrades a database of the schema before files were bounded", async () => {
    expect(fileBoundsVersion).toBe(answersVersion - 1);
    expect(answersVersion).toBe(queuedCountVersion - 1);
    const url = await (await testCluster()).createDatabase();
    const store = await open(url);
    await store.commit({
      commands: [
        createFile(fileIdOf(1)),
        createFile(fileIdOf(2), { purpose: 'batch_output' }),
        createFile(fileIdOf(3), { account: 2 }),
        createFile(fileIdOf(4), { now: 120 }),
        fileCommand(fileIdOf(4), { type: 'DeleteFile', accountId: 'acct_1', now: 150 }),
      ],
    });
    await undoFileBounds(store);
    await store.db.query(sql`UPDATE airs_schema_version SET version = ${fileBoundsVersion - 1}`);
    await store.close();
    opened.splice(opened.indexOf(store), 1);

    const upgraded = await open(url);
    expect(await upgraded.reads.accountCount(storedFilesCounter('acct_1'))).toBe(2);
    expect(await upgraded.reads.accountCount(storedFilesCounter('acct_2'))).toBe(1);
    expect(
      await upgraded.reads.listOf('accountFiles', 'acct_1', { order: 'asc', limit: 10, purpose: 'batch_output' }),
    ).toEqual([fileIdOf(2)]);
    const [index] = await upgraded.db.query<{ definition: string }[]>(
      sql`SELECT pg_get_indexdef('files_by_purpose'::regclass) AS definition`,
    );
    expect(index?.definition).toMatch(/\(account_id, purpose, created_at, file_id\)$/);
    expect((await verifyPostgres(upgraded.db)).differences).toEqual([]);
  });

  it("counts each batch's answers, and its account's stored bytes with them, when it upgrades a database of the schema before answers were counted", async () => {
    const url = await (await testCluster()).createDatabase();
    const store = await open(url);
    const [endedId, openId] = [batchIdOf(1), batchIdOf(2)];
    await store.commit({
      commands: [createFile(fileIdOf(1)), createBatch(endedId, fileIdOf(1)), createBatch(openId, fileIdOf(1))],
    });
    await store.commit({ commands: [takeBatch(endedId), takeBatch(openId)] });
    await store.commit({ commands: [startBatch(endedId, 1), startBatch(openId, 2)] });
    await store.commit({ commands: [lineSubmit(endedId, 1), lineSubmit(openId, 1), lineSubmit(openId, 2)] });
    const queue = queueOf(store);
    const held = await queue.claim(ask('A', 2_000, { max: 3 }));
    expect(held.started).toHaveLength(3);
    // The ended batch's line answers 10 characters, the open batch's two 20 each.
    const endedLine = lineRequestId(endedId, 1);
    for (const started of held.started)
      await queue.recordSuccess(
        { ...started, owner: 'A' },
        { text: 'x'.repeat(started.reqId === endedLine ? 10 : 20) },
        2_100,
      );
    // The ended batch wrote an output file of 77 bytes.
    await commitOne(store, batchCommand(endedId, { type: 'FinalizeBatch', owner: batchRunner, now: 2_200 }));
    await commitOne(
      store,
      batchCommand(endedId, {
        type: 'EndBatch',
        owner: batchRunner,
        outputFile: { fileId: fileIdOf(9), filename: 'out.jsonl', bytes: 77, sha256: 'a'.repeat(64) },
        completed: 1,
        failed: 0,
        now: 2_300,
      }),
    );
    const storedBytesOf = async (of: PostgresStore) =>
      Number(
        (
          await of.db.query<{ count: number }[]>(
            sql`SELECT count FROM account_counts WHERE counter = ${storedBytesCounter('acct_1')}`,
          )
        )[0]?.count,
      );
    const viewsOf = async (of: PostgresStore) => ({
      ended: (await of.reads.batch(endedId))?.counts,
      open: (await of.reads.batch(openId))?.counts,
    });
    const counted = await viewsOf(store);
    // The two files; the ended batch's answer, kept; the open batch's two, kept and as room for its output file.
    expect(await storedBytesOf(store)).toBe(1_234 + 77 + 10 + 2 * 40);
    expect(counted).toMatchObject({
      ended: { answerChars: 10, keptAnswerChars: 10 },
      open: { answerChars: 40, keptAnswerChars: 40 },
    });
    // As the version before left it: views without the answers, stored bytes of files alone.
    await store.db.query({
      text: `UPDATE batches SET state = ((state::jsonb #- '{counts,answerChars}') #- '{counts,keptAnswerChars}')::json;
        UPDATE account_counts SET count = 1234 + 77 WHERE counter = 'fileBytes' || chr(31) || 'acct_1';`,
      values: [],
    });
    await store.db.query(sql`UPDATE airs_schema_version SET version = ${answersVersion - 1}`);
    await store.close();
    opened.splice(opened.indexOf(store), 1);

    const upgraded = await open(url);
    expect(await viewsOf(upgraded)).toEqual(counted);
    expect(await storedBytesOf(upgraded)).toBe(1_234 + 77 + 10 + 2 * 40);
    expect((await verifyPostgres(upgraded.db)).differences).toEqual([]);
  });

  it("decides a batch's lines in one round each time: their submits, a claim of them, their successes (a line's batch comes with its request)", async () => {
    const rounds: number[] = [];
    const store = await openPostgresStore(await (await testCluster()).createDatabase(), {
      maxConnections: 3,
      onBatch: (n) => void rounds.push(n),
    });
    opened.push(store);
    const batchId = batchIdOf(1);
    await store.commit({ commands: [createAccount(1), createFile(fileIdOf(1)), createBatch(batchId, fileIdOf(1))] });
    await commitOne(store, takeBatch(batchId));
    await commitOne(store, startBatch(batchId, 40));
    await store.commit({ commands: oneToN(40).map((line) => lineSubmit(batchId, line)) });
    await commitOne(store, submit('req_interactive', { now: 1_500 }));
    // Claims of a few, as workers make them: each reads the lanes' first waiting requests with the lock.
    const held: { reqId: string; attempt: number }[] = [];
    for (const now of [2_000, 2_001, 2_002, 2_003, 2_004]) {
      const claim = await commitOne(store, {
        type: 'Claim',
        ...ask('A', now, { max: 3, modelLimits: { echo: 40 } }),
        batchShare: 0.5,
      } as Command);
      for (const event of eventsOf(claim))
        if (event.type === 'RequestProcessingStarted') held.push({ reqId: event.reqId, attempt: event.attempt });
    }
    expect(held).toHaveLength(15);
    expect(held.map(({ reqId }) => reqId)).toContain('req_interactive');
    const lines = held.filter(({ reqId }) => reqId !== 'req_interactive');
    await store.commit({
      commands: lines.map(
        (line): Command => ({
          type: 'RecordSuccess',
          reqId: line.reqId,
          responseChars: 2,
          response: 'ok',
          inputTokens: 1,
          outputTokens: 2,
          owner: 'A',
          attempt: line.attempt,
          now: 2_100,
        }),
      ),
    });
    // One at a time too, as a worker records them.
    const [next] = (await queueOf(store).claim(ask('B', 2_200, { max: 1 }))).started;
    if (next === undefined) throw new Error('no line was left to claim');
    expect(await queueOf(store).recordSuccess({ ...next, owner: 'B' }, { text: 'ok', inputTokens: 1 }, 2_300)).toBe(
      'recorded',
    );
    expect(await store.reads.batch(batchId)).toMatchObject({
      counts: { queued: 40, completed: 15, failed: 0, inputTokens: 15, outputTokens: 28 },
    });
    expect(rounds).toEqual(oneToN(13).map(() => 1));
    // The runner's steps too: cancelling, finalizing once every queued line ended.
    await commitOne(store, batchCommand(batchId, { type: 'CancelBatch', accountId: 'acct_1', now: 2_400 }));
    await store.commit({
      commands: oneToN(40)
        .map((line) => lineSubmit(batchId, line))
        .map((line) => ({ type: 'Cancel', reqId: (line as { reqId: string }).reqId, now: 2_500 }) as Command),
    });
    const finalizing = await commitOne(
      store,
      batchCommand(batchId, { type: 'FinalizeBatch', owner: batchRunner, now: 2_600 }),
    );
    expect(eventsOf(finalizing).map((event) => event.type)).toEqual(['BatchFinalizing']);
    expect(rounds.every((n) => n === 1)).toBe(true);
    expect((await verifyPostgres(store.db)).differences).toEqual([]);
  });

  it('keeps any text a request or an event holds, NUL and astral characters included', async () => {
    const store = await open();
    const prompt = 'a\u0000b \u{1F600} \u2028 "quoted" \\ end';
    await store.commit({
      commands: [submit('req_a', { prompt }), { type: 'StartAttempt', reqId: 'req_a', now: 1_001 }],
    });
    expect((await store.reads.requestWithText('req_a'))?.text).toBe(prompt);
    const failure: Command = {
      type: 'RecordFailure',
      reqId: 'req_a',
      reason: 'upstream said \u0000 and \u{1F600}',
      policy: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 },
      now: 1_002,
    };
    await commitOne(store, failure);
    const failed = await store.reads.request('req_a');
    expect(failed?.context.failureReason).toContain('upstream said \u0000 and \u{1F600}');
    expect((await replay(store)).at(-1)).toMatchObject({ type: 'RequestFailed' });
  });

  it('replays a log longer than one page of reads, from the start and from inside it', async () => {
    const store = await open();
    for (const batch of oneToN(5))
      await store.commit({ commands: oneToN(500).map((i) => submit(`req_${batch}_${i}`, { account: i % 7 })) });
    const all = await replay(store);
    expect(all.map((event) => event.seq)).toEqual(oneToN(2_500));
    expect((await replay(store, 999)).map((event) => event.seq)).toEqual(oneToN(1_502).map((i) => i + 998));
  });

  it('keeps the throttles’ keys bounded: those that left their window go as later tries come, and a spray of new ones keeps the newest', async () => {
    const windowMs = 60_000;
    const ask = (key: string, now: number) => ({ scope: 'login', keys: [key], max: 5, windowMs, now });
    const store = await openPostgresStore(await (await testCluster()).createDatabase(), {
      maxConnections: 2,
      throttleBounds: { maxKeys: 50, checkEvery: 1 },
    });
    opened.push(store);
    const keyCount = async () => (await store.db.query(sql`SELECT count(*) AS n FROM attempts`))[0]?.n;
    for (let i = 0; i < 40; i += 1) await store.throttle.reserve(ask(`email:${i}@example.com`, 1_000));
    expect(await keyCount()).toBe(40);
    for (let i = 0; i < 4; i += 1) await store.throttle.reserve(ask('address:203.0.113.9', 1_001 + windowMs + i));
    expect(await keyCount()).toBe(1);
    for (let i = 0; i < 200; i += 1) await store.throttle.reserve(ask(`email:${i}@example.com`, 100_000 + i));
    expect(await keyCount()).toBeLessThanOrEqual(51);
    for (let i = 0; i < 4; i += 1)
      expect(await store.throttle.reserve(ask('email:199@example.com', 101_000))).toBeUndefined();
    expect(await store.throttle.reserve(ask('email:199@example.com', 101_000))).toEqual({
      retryAfterMs: 100_199 + windowMs - 101_000,
    });
  });

  it('leaves, after three nodes wrote at once, a gap-free log whose fold is every request view and count', async () => {
    const url = await (await testCluster()).createDatabase();
    const nodes = await Promise.all(oneToN(3).map(() => open(url)));
    const reqIds = oneToN(60).map((i) => `req_${i}`);
    const policy = { maxAttempts: 2, baseDelayMs: 50, maxDelayMs: 100 };
    // Each node submits a third of the requests (some twice, through another node), claims, answers half of what
    // it holds and fails the rest, expires some, all at once.
    const work = nodes.map(async (node, n) => {
      const queue = queueOf(node);
      for (let round = 0; round < 6; round++) {
        const mine = reqIds.filter((_, i) => i % 3 === n).slice(round * 4, round * 4 + 4);
        const now = 1_000 + round * 100;
        await node.commit({
          commands: [
            ...mine.map((reqId, i) => submit(reqId, { account: (i + n) % 5, now, model: i % 2 ? 'echo' : 'slow' })),
            submit(reqIds[(round * 7 + n) % reqIds.length] as string, { now, account: 9 }),
          ],
        });
        const claimed = await queue.claim(
          ask(`node_${n}`, now + 10, { max: 5, modelLimits: { slow: 2 }, leaseMs: 200, policy }),
        );
        await Promise.all(
          claimed.started.map((held, i) =>
            i % 2 === 0
              ? queue.recordSuccess(
                  { ...held, owner: `node_${n}` },
                  { text: 'ok', inputTokens: 1, outputTokens: 1 },
                  now + 20,
                )
              : queue.recordFailure({ ...held, owner: `node_${n}` }, 'upstream 500', policy, now + 20),
          ),
        );
        if (round === 4)
          await node.commit({ commands: mine.map((reqId) => ({ type: 'Expire' as const, reqId, now: 61_500 })) });
      }
    });
    await Promise.all(work);
    const [reader] = nodes;
    if (reader === undefined) throw new Error('no node');
    const log = await replay(reader);
    expect(log.map((event) => event.seq)).toEqual(oneToN(log.length));
    const byRequest = new Map<string, RequestEvent[]>();
    for (const event of log)
      if (isRequestEvent(event)) byRequest.set(event.reqId, [...(byRequest.get(event.reqId) ?? []), event]);
    const starts = new Set<string>();
    const queued = new Map<string, number>();
    const processing = new Map<string, number>();
    for (const [reqId, events] of byRequest) {
      const folded = foldRequest(events);
      expect(JSON.parse(JSON.stringify(await reader.reads.request(reqId)))).toEqual(JSON.parse(JSON.stringify(folded)));
      if (isQueued(folded.status))
        queued.set(folded.context.accountId, (queued.get(folded.context.accountId) ?? 0) + 1);
      if (folded.status === 'processing')
        for (const counter of countersOf(folded.context)) processing.set(counter, (processing.get(counter) ?? 0) + 1);
      for (const event of events)
        if (event.type === 'RequestProcessingStarted') {
          expect(starts.has(`${reqId}/${event.attempt}`)).toBe(false);
          starts.add(`${reqId}/${event.attempt}`);
        }
    }
    expect(starts.size).toBeGreaterThan(20);
    const counts = async (table: string) =>
      new Map(
        (await reader.db.query({ text: `SELECT * FROM ${table}`, values: [] })).map((row) => [
          String(row.account_id ?? row.counter),
          Number(row.count),
        ]),
      );
    expect(await counts('queued_counts')).toEqual(queued);
    expect(await counts('processing_counts')).toEqual(processing);
  }, 120_000);

  it('rejects a batch whose connection is cut in the middle of it, writes nothing of it, and commits on a new connection', async () => {
    const url = await (await testCluster()).createDatabase();
    const store = await open(url);
    await commitOne(store, createAccount(1));
    // Another session holds the log's writer lock, so the batch waits inside its transaction, lock asked for.
    const blocker = new pg.Client({ connectionString: url });
    await blocker.connect();
    const block = async <R>(statement: { text: string; values: unknown[] }) =>
      (await blocker.query(statement.text, statement.values)).rows as R[];
    try {
      await block(sql`SELECT pg_advisory_lock(${lockSpace.log}::int, 1)`);
      const batch = { commands: [createAccount(2), submit('req_a')] };
      // Its failure is taken at once: it can come before the terminating statement below answers, and a rejection
      // nobody holds yet is an unhandled one.
      const committing = store.commit(batch).then(
        () => undefined,
        (error: unknown) => error,
      );
      const waiting = async () =>
        block<{ pid: number }>(sql`
          SELECT pid FROM pg_stat_activity
          WHERE datname = current_database() AND application_name = 'airs' AND wait_event_type = 'Lock'`);
      for (let tries = 0; (await waiting()).length === 0; tries++) {
        if (tries > 500) throw new Error('the batch never waited for the lock');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await block(sql`
        SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = 'airs' AND wait_event_type = 'Lock'`);
      expect(await committing).toBeInstanceOf(Error);
      await block(sql`SELECT pg_advisory_unlock(${lockSpace.log}::int, 1)`);
      expect(await store.reads.lastSeq()).toBe(1);
      expect(await store.reads.account('acct_2')).toBeUndefined();
      expect(await store.reads.request('req_a')).toBeUndefined();
      // The pool opens a new connection for the next batch.
      const outcomes = await store.commit(batch);
      expect(outcomes.map((outcome) => ('events' in outcome ? outcome.events.map((e) => e.seq) : []))).toEqual([
        [2],
        [3],
      ]);
    } finally {
      await blocker.end();
    }
  });

  it('hears commits again after its listening connection was cut, and is told at once that it may have missed some', async () => {
    const url = await (await testCluster()).createDatabase();
    const { writing, heard, stop } = await listeningPair(url);
    try {
      const before = heard();
      // Cut every LISTENing connection to the database (the listener's; the server would cut it the same way).
      await writing.db.query(sql`
        SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE 'listen%'`);
      await eventually(() => heard() > before, 15_000, 'the listener was told after listening again');
      const after = heard();
      await commitOne(writing, submit('req_b'));
      await eventually(() => heard() > after, 10_000, 'a commit after the cut was heard');
    } finally {
      stop();
    }
  }, 60_000);

  it('listens again after its database restarts, tells its listeners then (the processor looks at the queue), and hears later commits', async () => {
    const cluster = await testCluster();
    const url = await cluster.createDatabase();
    const { listening, writing, heard, stop } = await listeningPair(url);
    try {
      cluster.stopServer();
      const before = heard();
      // While it is away, a call of the store is a StoreUnreachable (503), not a raw connection error.
      await expect(listening.reads.request('req_a')).rejects.toMatchObject({ name: 'StoreUnreachable' });
      await expect(listening.ping?.()).rejects.toMatchObject({ name: 'StoreUnreachable' });
      cluster.startServer();
      await eventually(() => heard() > before, 15_000, 'the listener was told after listening again');
      // Both stores listen again, each on a connection of its own; they reconnect independently (one may be told
      // before the other is back).
      const deadline = Date.now() + 15_000;
      while ((await cluster.airsListeners(url)) !== 2) {
        if (Date.now() > deadline) throw new Error('both stores did not listen again within 15 s');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await listening.ping?.();
      const after = heard();
      await commitOne(writing, submit('req_b'));
      await eventually(() => heard() > after, 10_000, 'a commit after the restart was heard');
    } finally {
      stop();
    }
  }, 60_000);
});
