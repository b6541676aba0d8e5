import { changesChannel } from './batch.js';
import { type Db, type Query, sql } from './db.js';
import { lockSpace } from './schema.js';

/**
 * The log's numbering without a global write lock (issue 28; the scheme of Marten's and Emmett's event stores, made
 * gap-free). A batch writes its events with its transaction's id (`tx`, xid8, taken once it holds its locks:
 * locks.ts) and their place in it (`ord`), and no `seq`. Numbering, a short transaction of its own (any node, any
 * time: after each commit that appended, when a store opens), takes every unnumbered row whose transaction id is below
 * `pg_snapshot_xmin(pg_current_snapshot())`, the oldest transaction still running, and numbers them after the last
 * number, in (tx, ord) order.
 *
 * - Never a gap a reader could pass: a transaction below the horizon has ended, so no row can appear there any more (a
 *   transaction that starts later gets a larger id); rows of a transaction that rolled back never existed. Numbers
 *   are given once, in one order, under `(lockSpace.log, 1)`, so the numbered rows are always 1..last_seq.
 * - The same numbers after a crash: what one numbering numbers is a prefix, in (tx, ord) order, of everything
 *   committed and unnumbered, so numbering again what a crash lost gives the same numbers. So numbering commits
 *   without waiting for its flush (`synchronous_commit = off`), and is flushed by the next durable commit anyway.
 * - Causal order: a batch that read what another wrote (under a common lock) took its id after that one committed,
 *   so its events come later (per request, per batch, per account: what the folds need).
 * - A commit's answer waits until its events are numbered, which is when every transaction older than it has ended
 *   (one long transaction with an id, anywhere in the cluster, holds numbering back meanwhile).
 * - Readers (reads.ts `events`, `lastSeq`; verify; `airs replay`) read numbered rows only, by `seq`, as before. An
 *   event's payload holds its place in its batch, not its number: readers put the number in.
 * - NOTIFY (`changesChannel`) is sent by the numbering that numbered something, not by the batch's transaction:
 *   PostgreSQL serialises the commits of transactions that NOTIFY (a lock held through the commit's flush), which
 *   would be a global write lock again.
 */

/** Numbers what can be numbered (in a transaction of its own); returns the first number of each transaction in
 * `waiting` that is numbered now (by this numbering or an earlier one, of any node). */
export const numberLog = async (db: Db, waiting: readonly string[]): Promise<Map<string, number>> =>
  db.begin(async (query: Query) => {
    // One round trip: the statements go out together and run in order on the transaction's connection.
    const [, , , rows] = await Promise.all([
      query(sql`SET LOCAL synchronous_commit = off`),
      query(sql`SELECT pg_advisory_xact_lock(${lockSpace.log}::int, 1)`),
      query(sql`
        WITH head AS (SELECT last_seq FROM log_head WHERE id = 1),
        todo AS (
          SELECT tx, ord, row_number() OVER (ORDER BY tx, ord) AS n FROM events
          WHERE seq IS NULL AND tx < pg_snapshot_xmin(pg_current_snapshot())
        ), done AS (
          UPDATE events e SET seq = head.last_seq + todo.n FROM todo, head
          WHERE e.seq IS NULL AND e.tx = todo.tx AND e.ord = todo.ord
          RETURNING e.seq
        ), moved AS (
          UPDATE log_head SET last_seq = (SELECT max(seq) FROM done) WHERE id = 1 AND EXISTS (SELECT 1 FROM done)
          RETURNING last_seq
        )
        SELECT pg_notify(${changesChannel}, last_seq::text) FROM moved`),
      waiting.length === 0
        ? Promise.resolve([])
        : query<{ tx: string; first: number | null }[]>(sql`
            SELECT u.tx, (SELECT min(seq) FROM events e WHERE e.tx = u.tx::xid8)::float8 AS first
            FROM unnest(${[...waiting]}::text[]) AS u(tx)`),
    ]);
    const firsts = new Map<string, number>();
    for (const { tx, first } of rows) if (first !== null) firsts.set(tx, first);
    return firsts;
  });

/**
 * A store's numberer: `numbered(tx)` resolves to the first number of the events of the committed transaction `tx`,
 * numbering (one numbering at a time per store, shared by every batch waiting then) until they are.
 */
export const numberer = (db: Db) => {
  const waiters = new Map<string, ((first: number) => void)[]>();
  let running: Promise<void> | undefined;
  let again = false;
  /** Ends the pause between two numberings: another node numbered something (its NOTIFY), perhaps what is waited for. */
  let poked: (() => void) | undefined;
  // The batches waiting are committed already: a numbering that fails (a connection cut) is tried again a few times
  // before they are answered with its error (their events are numbered by the next numbering of any node anyway).
  const numberWithRetries = async (waiting: readonly string[]) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await numberLog(db, waiting);
      } catch (error) {
        if (attempt >= 4) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
      }
    }
  };
  const run = async () => {
    let pause = 0;
    while (waiters.size > 0 || again) {
      again = false;
      const firsts = await numberWithRetries([...waiters.keys()]);
      for (const [tx, first] of firsts) {
        for (const resolve of waiters.get(tx) ?? []) resolve(first);
        waiters.delete(tx);
      }
      if (waiters.size === 0) break;
      // A transaction older than those waited for still runs: it ends soon (batches are short), then it is tried again.
      if (firsts.size === 0) {
        pause = Math.min(20, pause + 1);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, pause);
          poked = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        poked = undefined;
      } else pause = 0;
    }
  };
  const kick = () => {
    if (running !== undefined) {
      again = true;
      return running;
    }
    running = run().finally(() => {
      running = undefined;
    });
    return running;
  };
  return {
    numbered: (tx: string): Promise<number> =>
      new Promise<number>((resolve, reject) => {
        const list = waiters.get(tx) ?? [];
        list.push(resolve);
        waiters.set(tx, list);
        kick().catch((error) => {
          waiters.delete(tx);
          reject(error);
        });
      }),
    /** Another node's numbering was heard: a pause ends now. */
    poke: () => poked?.(),
    /** Numbers what can be numbered now (a store that opens: what a crash left unnumbered). */
    numberNow: async () => {
      await numberLog(db, []);
    },
  };
};
