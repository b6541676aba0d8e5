import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openMemoryStore } from '../../../src/adapters/memory/MemoryStore.js';
import { openPostgresStore } from '../../../src/adapters/postgres/PostgresStore.js';
import { type Command, isRefusal } from '../../../src/domain/commands.js';
import { defaultPlans } from '../../../src/domain/plans.js';
import type { RetryPolicy } from '../../../src/domain/request/retryPolicy.js';
import type { CommandOutcome, StoreShape } from '../../../src/ports/Store.js';
import { batchCommand, fileCommand } from '../../contract/fixtures.js';
import { stopTestCluster, testCluster } from '../../support/postgres.js';

/**
 * The PostgreSQL store decides every batch as the in-memory store does (the reference: the same writeBatch over maps
 * that hold everything). PostgreSQL's deciding reads only what it fetched for the batch, fetching more whenever a read
 * needs it; here the fetches are tiny (two accounts, two waiting requests at a time), so that claims over several
 * accounts, long queues, wrap-rounds and batches that read what earlier commands of theirs changed take every way of
 * fetching more. Batches' lines wait in their accounts' batch lanes beside the accounts' own, and claims may hold them
 * back (`batchShare`). Outcomes batch by batch, then everything the read model answers, must be equal.
 */

const accounts = ['acct_1', 'acct_2', 'acct_3', 'acct_4', 'acct_5', 'acct_6'];
/** Batches of acct_1 and acct_2 (in progress from the first batch of commands on), and one any command may make. */
const batchIds = ['1', '2', '3'].map((n) => `batch_${n.padStart(28, 'x')}`);
const batchAccounts = ['acct_1', 'acct_2', 'acct_1'];
const fileIds = ['file_1', 'file_2', 'file_3'];
const batchOwner = 'R';
const reqIds = Array.from({ length: 24 }, (_, i) => `req_${String(i).padStart(2, '0')}`);
const owners = ['A', 'B', 'C'];
const policy: RetryPolicy = { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 1_000 };
const at = fc.integer({ min: 0, max: 4_000 });

const submit: fc.Arbitrary<Command> = fc
  .record({
    reqId: fc.constantFrom(...reqIds),
    // acct_1 and acct_2 more often: they have batches, so lines and their own requests wait side by side.
    accountId: fc.constantFrom(...accounts, 'acct_1', 'acct_2', 'acct_1', 'acct_2'),
    model: fc.constantFrom('echo', 'slow'),
    now: fc.integer({ min: 0, max: 2_000 }),
    ttlMs: fc.integer({ min: 500, max: 3_000 }),
    prompt: fc.string({ maxLength: 6 }),
    key: fc.option(fc.constantFrom('k1', 'k2'), { nil: undefined }),
    body: fc.constantFrom('a', 'b'),
    maxQueued: fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
    startNow: fc.option(fc.constantFrom(...owners), { nil: undefined }),
    modelLimit: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
    maxAttempts: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
    // A batch's line (of the batch's account): it waits in the account's batch lane.
    line: fc.oneof(
      { arbitrary: fc.constant(undefined), weight: 3 },
      { arbitrary: fc.integer({ min: 0, max: 2 }), weight: 2 },
    ),
  })
  .map(
    (s): Command => ({
      type: 'Submit',
      reqId: s.reqId,
      accountId: s.line === undefined ? s.accountId : (batchAccounts[s.line] as string),
      ...(s.line === undefined ? {} : { batchId: batchIds[s.line], customId: `line-${s.reqId}` }),
      keyId: 'key_1',
      model: s.model,
      promptChars: s.prompt.length,
      prompt: s.prompt,
      ttlMs: s.ttlMs,
      now: s.now,
      ...(s.key === undefined ? {} : { idempotency: { key: s.key, requestHash: `sha256:${s.body}` } }),
      ...(s.maxQueued === undefined ? {} : { maxQueued: s.maxQueued }),
      ...(s.startNow === undefined ? {} : { startNow: { owner: s.startNow, leaseMs: 500 }, modelLimit: s.modelLimit }),
      ...(s.maxAttempts === undefined ? {} : { maxAttempts: s.maxAttempts }),
    }),
  );

const claim: fc.Arbitrary<Command> = fc
  .record({
    owner: fc.constantFrom(...owners),
    now: at,
    max: fc.integer({ min: 1, max: 8 }),
    slow: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
    after: fc.option(fc.constantFrom('acct_0', ...accounts, 'acct_1\u001fbatch', 'acct_9'), { nil: undefined }),
    batchShare: fc.option(fc.constantFrom(0, 0.25, 0.5, 1), { nil: undefined }),
  })
  .map(
    (c): Command => ({
      type: 'Claim',
      owner: c.owner,
      now: c.now,
      leaseMs: 500,
      max: c.max,
      modelLimits: c.slow === undefined ? {} : { slow: c.slow },
      after: c.after,
      policy,
      ...(c.batchShare === undefined ? {} : { batchShare: c.batchShare, workers: 4 }),
    }),
  );

const onRequest: fc.Arbitrary<Command> = fc.oneof(
  fc
    .record({ reqId: fc.constantFrom(...reqIds), now: at, owner: fc.constantFrom(...owners) })
    .map((c): Command => ({ type: 'StartAttempt', ...c, leaseMs: 500 })),
  fc
    .record({
      reqId: fc.constantFrom(...reqIds),
      now: at,
      owner: fc.constantFrom(...owners),
      attempt: fc.integer({ min: 1, max: 3 }),
      response: fc.string({ maxLength: 6 }),
    })
    .map(
      (c): Command => ({
        type: 'RecordSuccess',
        ...c,
        responseChars: c.response.length,
        inputTokens: 2,
        outputTokens: 3,
      }),
    ),
  fc
    .record({
      reqId: fc.constantFrom(...reqIds),
      now: at,
      owner: fc.constantFrom(...owners),
      attempt: fc.integer({ min: 1, max: 3 }),
    })
    .map((c): Command => ({ type: 'RecordFailure', ...c, reason: 'upstream 500', policy })),
  fc
    .record({
      reqId: fc.constantFrom(...reqIds),
      now: at,
      owner: fc.constantFrom(...owners),
      attempt: fc.integer({ min: 1, max: 3 }),
    })
    .map((c): Command => ({ type: 'ExtendLease', ...c, leaseMs: 500 })),
  fc
    .record({
      reqId: fc.constantFrom(...reqIds),
      now: at,
      owner: fc.constantFrom(...owners),
      attempt: fc.integer({ min: 1, max: 3 }),
    })
    .map((c): Command => ({ type: 'Release', ...c })),
  fc
    .record({
      reqId: fc.constantFrom(...reqIds),
      now: at,
      owner: fc.constantFrom(...owners),
      attempt: fc.integer({ min: 1, max: 3 }),
    })
    .map((c): Command => ({ type: 'OwnerGone', ...c })),
  fc.record({ reqId: fc.constantFrom(...reqIds), now: at }).map((c): Command => ({ type: 'Expire', ...c })),
  fc.record({ reqId: fc.constantFrom(...reqIds), now: at }).map((c): Command => ({ type: 'Cancel', ...c })),
);

const sessions = ['sess_1', 'sess_2', 'sess_3'];
const onAccount: fc.Arbitrary<Command> = fc
  .record({
    accountId: fc.constantFrom(...accounts.slice(0, 3)),
    now: at,
    which: fc.integer({ min: 0, max: 8 }),
    email: fc.constantFrom('a@x.io', 'b@x.io', 'c@x.io', 'd@x.io'),
    keyId: fc.constantFrom('key_1', 'key_2', 'key_3'),
    sessionId: fc.constantFrom(...sessions),
    hash: fc.constantFrom('h1', 'h2'),
  })
  .map(({ accountId, now, which, email, keyId, sessionId, hash }): Command => {
    const commands = [
      { type: 'CreateAccount', accountId, email, plan: 'free', now },
      { type: 'CreateKey', keyId, keyHash: `hash_${keyId}`, prefix: keyId, name: 'k', plans: defaultPlans, now },
      { type: 'RevokeKey', key: { keyId }, now },
      { type: 'SetPassword', passwordHash: hash, now },
      {
        type: 'StartSession',
        sessionId,
        secretHash: `secret_${sessionId}`,
        expiresAt: now + 10_000,
        checkedPasswordHash: hash,
        now,
      },
      { type: 'EndSession', sessionId, now },
      { type: 'Suspend', now },
      { type: 'Resume', now },
      { type: 'ChangePlan', plan: 'pro', now },
    ];
    return { type: 'Account', accountId, command: commands[which] as never };
  });

const onBatch: fc.Arbitrary<Command> = fc
  .record({
    batch: fc.integer({ min: 0, max: 2 }),
    file: fc.integer({ min: 0, max: 2 }),
    now: at,
    which: fc.integer({ min: 0, max: 9 }),
    owner: fc.constantFrom(batchOwner, 'S'),
    done: fc.integer({ min: 0, max: 3 }),
  })
  .map(({ batch, file, now, which, owner, done }): Command => {
    const batchId = batchIds[batch] as string;
    const accountId = batchAccounts[batch] as string;
    const fileId = fileIds[file] as string;
    const commands: Command[] = [
      batchCommand(batchId, {
        type: 'CreateBatch',
        accountId,
        keyId: 'key_1',
        endpoint: '/v1/responses',
        inputFileId: fileId,
        completionWindow: '24h',
        windowMs: 2_000,
        now,
      }),
      batchCommand(batchId, { type: 'TakeBatch', owner, leaseMs: 1_000, now }),
      batchCommand(batchId, { type: 'StartBatch', owner, total: done, now }),
      batchCommand(batchId, { type: 'CancelBatch', accountId, now }),
      batchCommand(batchId, { type: 'CloseWindow', now }),
      batchCommand(batchId, { type: 'FinalizeBatch', owner, now }),
      batchCommand(batchId, { type: 'EndBatch', owner, completed: done, failed: 0, now }),
      batchCommand(batchId, { type: 'OwnerGone', owner, now }),
      fileCommand(fileId, {
        type: 'CreateFile',
        accountId,
        purpose: file === 2 ? 'batch_output' : 'batch',
        filename: 'in.jsonl',
        bytes: 10,
        sha256: 'sha',
        now,
      }),
      fileCommand(fileId, { type: 'DeleteFile', accountId, now }),
    ];
    return commands[which] as Command;
  });

const command = fc.oneof(
  { arbitrary: submit, weight: 4 },
  { arbitrary: claim, weight: 2 },
  { arbitrary: onRequest, weight: 3 },
  { arbitrary: onAccount, weight: 2 },
  { arbitrary: onBatch, weight: 1 },
);

/** The first batch of commands of every run: files, and the batches of acct_1 and acct_2 in progress. */
const prelude: Command[] = [
  ...fileIds.map((fileId, i) =>
    fileCommand(fileId, {
      type: 'CreateFile',
      accountId: batchAccounts[i] as string,
      purpose: 'batch',
      filename: 'in.jsonl',
      bytes: 10,
      sha256: 'sha',
      now: 0,
    }),
  ),
  ...batchIds.slice(0, 2).flatMap((batchId, i): Command[] => [
    batchCommand(batchId, {
      type: 'CreateBatch',
      accountId: batchAccounts[i] as string,
      keyId: 'key_1',
      endpoint: '/v1/chat/completions',
      inputFileId: fileIds[i] as string,
      completionWindow: '24h',
      windowMs: 86_400_000,
      now: 0,
    }),
    batchCommand(batchId, { type: 'TakeBatch', owner: batchOwner, leaseMs: 1_000_000, now: 0 }),
    batchCommand(batchId, { type: 'StartBatch', owner: batchOwner, total: 8, now: 0 }),
  ]),
];
const batches = fc.array(fc.array(command, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 14 });

/** An outcome as plain data: events and replays as they are, a refusal by its class and message, an error by its
 * message. */
const plain = (outcome: CommandOutcome | Error) => {
  if (isRefusal(outcome)) return { refused: outcome._tag, message: outcome.message };
  if (outcome instanceof Error) return { error: outcome.message };
  return JSON.parse(JSON.stringify(outcome)) as unknown;
};

/** An account's requests in pages of two: the newest, those before the last of them, those after the first. */
const pagesOf = async (store: StoreShape, accountId: string) => {
  const newest = await store.reads.requestsOf(accountId, { limit: 2 });
  const cursorOf = (state: (typeof newest)[number] | undefined) =>
    state === undefined ? undefined : { createdAt: state.context.createdAt, reqId: state.context.reqId };
  const older = await store.reads.requestsOf(accountId, { before: cursorOf(newest.at(-1)), limit: 2 });
  const newer = await store.reads.requestsOf(accountId, { after: cursorOf(older.at(0)), limit: 2 });
  return [newest, older, newer].map((page) => page.map((state) => state.context.reqId));
};

/** Everything the read model answers about the ids the batches use. */
const everything = async (store: StoreShape) => {
  const events = [];
  for await (const event of store.reads.events()) events.push(event);
  const perAccount = await Promise.all(
    accounts.map(async (accountId) => ({
      account: await store.reads.account(accountId),
      keys: await store.reads.keysOf(accountId),
      requests: await store.reads.requestsOf(accountId, { limit: 100 }),
      pages: await pagesOf(store, accountId),
      counts: await store.reads.requestCountsByHour(accountId, 0, 2),
      usage: await store.reads.usageByDay(accountId, 0, 1),
    })),
  );
  return JSON.parse(
    JSON.stringify({
      events,
      lastSeq: await store.reads.lastSeq(),
      accountsVersion: await store.reads.accountsVersion(),
      accounts: await store.reads.accounts(),
      perAccount,
      requests: await Promise.all(reqIds.map((reqId) => store.reads.requestWithText(reqId))),
      sessions: await Promise.all(sessions.map((sessionId) => store.reads.session(sessionId))),
      credentials: await Promise.all(
        [...accounts.map((a) => `password:${a}`), ...sessions.map((s) => `session:${s}`)].map((key) =>
          store.reads.credential(key),
        ),
      ),
      emails: await Promise.all(['a@x.io', 'b@x.io', 'c@x.io'].map((email) => store.reads.accountIdByEmail(email))),
      dueForExpiry: await store.reads.dueForExpiry(3_000, 100),
      dueWork: await Promise.all([0, 1_000, 2_000, 4_000].map((now) => store.reads.dueWork(now))),
      queueDepths: await store.reads.queueDepths(2_000, 100),
      queueDepthsShallow: await store.reads.queueDepths(2_000, 3),
      batches: await Promise.all(batchIds.map((batchId) => store.reads.batch(batchId))),
      files: await Promise.all(fileIds.map((fileId) => store.reads.file(fileId))),
      lists: await Promise.all(
        ['acct_1', 'acct_2'].flatMap((accountId) =>
          (['accountBatches', 'accountFiles'] as const).flatMap((list) => [
            store.reads.listOf(list, accountId, { order: 'asc', limit: 10 }),
            store.reads.listOf(list, accountId, { order: 'desc', limit: 1, from: { createdAt: 1_000, id: '' } }),
          ]),
        ),
      ),
      openBatches: await store.reads.openBatches(10),
    }),
  ) as unknown;
};

beforeAll(() => testCluster().then(() => {}), 120_000);
afterAll(() => stopTestCluster(), 60_000);

describe('The PostgreSQL store decides as the in-memory store', () => {
  it('gives every batch the same outcomes and leaves the same read model, fetching what it reads bit by bit', async () => {
    const cluster = await testCluster();
    let rounds = 0;
    let batchCount = 0;
    await fc.assert(
      fc.asyncProperty(batches, async (commands) => {
        const reference = openMemoryStore();
        const store = await openPostgresStore(await cluster.createDatabase(), {
          maxConnections: 2,
          fetchSizes: { accounts: 2, queue: 2, firstEntries: 1 },
          onBatch: (n) => {
            rounds += n;
            batchCount++;
          },
        });
        try {
          for (const batch of [prelude, ...commands]) {
            const expected = (await reference.commit({ commands: batch })).map(plain);
            const actual = (await store.commit({ commands: batch })).map(plain);
            expect(actual).toEqual(expected);
          }
          expect(await everything(store)).toEqual(await everything(reference));
        } finally {
          await store.close();
        }
      }),
      { numRuns: 30 },
    );
    // The tiny fetches did make batches fetch more than the first time.
    expect(rounds).toBeGreaterThan(batchCount);
  }, 300_000);
});
