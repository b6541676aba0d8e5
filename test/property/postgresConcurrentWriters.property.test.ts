import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/adapters/postgres/db.js';
import { openPostgresStore, type PostgresStore } from '../../src/adapters/postgres/PostgresStore.js';
import { verifyPostgres } from '../../src/adapters/postgres/verify.js';
import type { Command } from '../../src/domain/commands.js';
import type { StoredEvent } from '../../src/domain/events.js';
import type { RequestEvent } from '../../src/domain/request/events.js';
import type { RetryPolicy } from '../../src/domain/request/retryPolicy.js';
import { initialRequestState, isQueued, type RequestState, tryEvolve } from '../../src/domain/request/state.js';
import type { CommandOutcome } from '../../src/ports/Store.js';
import { stopTestCluster, testCluster } from '../support/postgres.js';

/**
 * PostgreSQL without a global write lock (issue 28): several store handles (each a pool of its own, as nodes are) commit
 * random batches at once on one database, each handle several batches at once, while a reader follows the log. The
 * reader must see every event exactly once, numbered 1, 2, 3, ... with no gap, each as the commit's outcome gave it;
 * the log must verify (every request's events accepted by its machine in log order, the views what the log folds to);
 * and the bounds decided under concurrency must hold at every point of the log: an account's requests waiting or being
 * processed (maxQueued), an account's requests being processed (maxProcessing, by claims and starts at once), a model's
 * (its bound), and a request is never started while it is being processed (no request claimed twice).
 */

const accounts = ['acct_1', 'acct_2', 'acct_3'];
const reqIds = Array.from({ length: 8 }, (_, i) => `req_${String(i).padStart(2, '0')}`);
const owners = ['A', 'B', 'C'];
const policy: RetryPolicy = { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 10 };
const maxQueued = 4;
const maxProcessing = 2;
const modelLimit = 3;
const at = fc.integer({ min: 0, max: 3_000 });

const submit: fc.Arbitrary<Command> = fc
  .record({
    reqId: fc.constantFrom(...reqIds),
    accountId: fc.constantFrom(...accounts),
    now: fc.integer({ min: 0, max: 1_000 }),
    key: fc.option(fc.constantFrom('k1', 'k2'), { nil: undefined }),
    startNow: fc.option(fc.constantFrom(...owners), { nil: undefined }),
  })
  .map(
    (s): Command => ({
      type: 'Submit',
      reqId: s.reqId,
      accountId: s.accountId,
      keyId: 'key_1',
      model: 'echo',
      promptChars: 2,
      prompt: 'hi',
      ttlMs: 60_000,
      now: s.now,
      maxQueued,
      ...(s.key === undefined ? {} : { idempotency: { key: s.key, requestHash: 'sha256:a' } }),
      ...(s.startNow === undefined ? {} : { startNow: { owner: s.startNow, leaseMs: 500 }, modelLimit, maxProcessing }),
    }),
  );

const claim: fc.Arbitrary<Command> = fc
  .record({ owner: fc.constantFrom(...owners), now: at, max: fc.integer({ min: 1, max: 4 }) })
  .map(
    (c): Command => ({
      type: 'Claim',
      owner: c.owner,
      now: c.now,
      leaseMs: 500,
      max: c.max,
      modelLimits: { echo: modelLimit },
      maxProcessing: { free: maxProcessing },
      policy,
    }),
  );

const onRequest: fc.Arbitrary<Command> = fc
  .record({
    which: fc.integer({ min: 0, max: 4 }),
    reqId: fc.constantFrom(...reqIds),
    now: at,
    owner: fc.constantFrom(...owners),
    attempt: fc.integer({ min: 1, max: 2 }),
  })
  .map(({ which, reqId, now, owner, attempt }): Command => {
    const commands: Command[] = [
      {
        type: 'RecordSuccess',
        reqId,
        now,
        owner,
        attempt,
        response: 'ok',
        responseChars: 2,
        inputTokens: 1,
        outputTokens: 1,
      },
      { type: 'RecordFailure', reqId, now, owner, attempt, reason: 'upstream 500', policy },
      { type: 'Release', reqId, now, owner, attempt },
      { type: 'Cancel', reqId, now },
      { type: 'Expire', reqId, now },
    ];
    return commands[which] as Command;
  });

const command = fc.oneof(
  { arbitrary: submit, weight: 4 },
  { arbitrary: claim, weight: 2 },
  { arbitrary: onRequest, weight: 3 },
);
const batch = fc.array(command, { minLength: 1, maxLength: 5 });
/** Per writer (a store handle), its batches, all committed at once. */
const writers = fc.array(fc.array(batch, { minLength: 2, maxLength: 6 }), { minLength: 3, maxLength: 3 });

const eventsOf = (outcome: CommandOutcome | Error): readonly StoredEvent[] =>
  outcome instanceof Error || !('events' in outcome) ? [] : outcome.events;

/** Follows the log from the start until `done()` and nothing more is there: each event checked to be the next. */
const follow = async (reader: PostgresStore, done: () => boolean): Promise<StoredEvent[]> => {
  const seen: StoredEvent[] = [];
  for (;;) {
    const finished = done();
    let read = 0;
    for await (const event of reader.reads.events(seen.length + 1)) {
      if (event.seq !== seen.length + 1)
        throw new Error(`the reader expected event ${seen.length + 1}, got ${event.seq}`);
      seen.push(event);
      read++;
    }
    if (finished && read === 0) return seen;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
};

/** Folds the log in its order, checking the bounds after every event. */
const boundsBroken = (log: readonly StoredEvent[]): string[] => {
  const broken: string[] = [];
  const states = new Map<string, RequestState>();
  const count = (predicate: (state: RequestState) => boolean) => {
    const counts = new Map<string, number>();
    for (const state of states.values())
      if (predicate(state)) counts.set(state.context.accountId, (counts.get(state.context.accountId) ?? 0) + 1);
    return counts;
  };
  for (const event of log) {
    if (!event.type.startsWith('Request')) continue;
    const { reqId } = event as RequestEvent;
    const before = states.get(reqId) ?? initialRequestState;
    // Taken over only once its lease lapsed (a claim takes lapsed leases), never while another owner holds it.
    if (
      event.type === 'RequestProcessingStarted' &&
      before.status === 'processing' &&
      (before.context.leaseUntil === undefined || before.context.leaseUntil > event.at)
    )
      broken.push(`event ${event.seq}: ${reqId} started while its lease ran`);
    const after = tryEvolve(before, event as RequestEvent);
    if (after === undefined) {
      broken.push(`event ${event.seq}: ${event.type} of ${reqId} not accepted in status ${before.status}`);
      continue;
    }
    states.set(reqId, after);
    for (const [account, n] of count((state) => isQueued(state.status)))
      if (n > maxQueued) broken.push(`event ${event.seq}: ${account} has ${n} requests queued`);
    for (const [account, n] of count((state) => state.status === 'processing'))
      if (n > maxProcessing) broken.push(`event ${event.seq}: ${account} has ${n} requests being processed`);
    const processing = [...states.values()].filter((state) => state.status === 'processing').length;
    if (processing > modelLimit) broken.push(`event ${event.seq}: echo has ${processing} requests being processed`);
  }
  return broken;
};

describe('The PostgreSQL store, with several writers at once and no global lock', () => {
  let cluster: Awaited<ReturnType<typeof testCluster>>;
  beforeAll(async () => {
    cluster = await testCluster();
  }, 120_000);
  afterAll(() => stopTestCluster(), 60_000);

  it('gives a follower every event once, gap-free, and keeps every decided bound', async () => {
    await fc.assert(
      fc.asyncProperty(writers, async (plan) => {
        const url = await cluster.createDatabase();
        const stores = await Promise.all(
          [...plan, []].map(() => openPostgresStore(url, { maxConnections: 4, batchesInFlight: 4 })),
        );
        const reader = stores.at(-1) as PostgresStore;
        try {
          await (stores[0] as PostgresStore).commit({
            commands: accounts.map(
              (accountId): Command => ({
                type: 'Account',
                accountId,
                command: { type: 'CreateAccount', accountId, email: `${accountId}@x.io`, plan: 'free', now: 0 },
              }),
            ),
          });
          let writing = true;
          const following = follow(reader, () => !writing);
          const outcomes = await Promise.all(
            plan.map((batches, i) =>
              Promise.all(batches.map((commands) => (stores[i] as PostgresStore).commit({ commands }))),
            ),
          ).finally(() => {
            writing = false;
          });
          const seen = await following;
          const committed = outcomes.flat(2).flatMap(eventsOf);
          // Every event once, in a gap-free order, as its commit told it.
          expect(seen.map((event) => event.seq)).toEqual(seen.map((_, i) => i + 1));
          expect(seen.length).toBe(committed.length + accounts.length);
          const bySeq = new Map(seen.map((event) => [event.seq, event]));
          for (const event of committed) expect(bySeq.get(event.seq)).toEqual(event);
          expect(await reader.reads.lastSeq()).toBe(seen.length);
          // Numbered in the order of the transactions' ids (then places in them): what makes numbering again, after a
          // crash lost a numbering that was not flushed, give the same numbers (sequence.ts).
          const order = await reader.db.query<{ seq: number }[]>(
            sql`SELECT seq::float8 AS seq FROM events ORDER BY tx, ord`,
          );
          expect(order.map((row) => row.seq)).toEqual(seen.map((event) => event.seq));
          // Exact decisions: every bound held at every point of the log, and the log verifies.
          expect(boundsBroken(seen)).toEqual([]);
          expect((await verifyPostgres(reader.db)).differences).toEqual([]);
        } finally {
          await Promise.all(stores.map((store) => store.close()));
          await cluster.dropDatabase(url);
        }
      }),
      { numRuns: Number(process.env.AIRS_PG_CONCURRENT_RUNS ?? 25), endOnFailure: true },
    );
  }, 600_000);
});
