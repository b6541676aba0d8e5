import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import type { Decision } from '../../domain/rateLimit/gcra.js';
import {
  type Batch,
  type CommandOutcome,
  type Spend,
  StorageFault,
  Store,
  type StoreNotices,
  type StoreShape,
  type ThrottleAsk,
  type ThrottleCounter,
  type ThrottlePlace,
} from '../../ports/Store.js';
import { spendAll } from '../../storage/spend.js';
import {
  forgetThrottleKey,
  maxThrottleKeys,
  releaseThrottlePlace,
  reserveThrottlePlace,
  scopedKey,
  type ThrottleEntry,
  type ThrottleTable,
  throttlePrunePerReserve,
} from '../../storage/throttleCounts.js';
import { changesChannel, commitInTransaction, reloadAskedPayload } from './batch.js';
import { type Db, openDb, type Query, sql } from './db.js';
import { isDiskFault, withConnectionFaults } from './faults.js';
import { postgresFileBytes } from './fileBytes.js';
import type { FetchSizes } from './overlay.js';
import { readsOf } from './reads.js';
import { redactedUrl } from './redactedUrl.js';
import { lockSpace, migrate } from './schema.js';

/**
 * The Store on PostgreSQL (13 or newer), shared by any number of nodes: the same deciding and projection as the LMDB
 * and memory stores (storage/writeBatch.ts), inside one transaction per batch (batch.ts), with the views as tables
 * (schema.ts) and the read model as queries (reads.ts).
 *
 * - Durable: every connection runs with `synchronous_commit = on`, whatever the server's default, so a commit (and the
 *   answer that waits for it) returns only once PostgreSQL has flushed it (and, with an operator's synchronous
 *   replica, replicated it).
 * - One writer of the log at a time across all nodes (an advisory lock held for the transaction): each command is
 *   decided against everything committed before, and sequence numbers are gap-free in commit order.
 * - Rate-limit spending and the throttles' counts: each in a short transaction of its own that locks the budgets or
 *   keys it touches (advisory locks, in a fixed order), so they are exact across nodes; committed without waiting for
 *   the flush (`synchronous_commit = off` for those only: not durable like the log, as the port allows).
 * - `onChange`: a connection of its own LISTENs; each commit that appends NOTIFYs in its transaction (delivered on
 *   commit, to every node).
 */

export type PostgresStoreOptions = {
  /** Connections of the pool (reads, batches, spends). */
  readonly maxConnections?: number;
  /** How much a batch fetches of the queue at once (tests: tiny, to take every way of fetching more). */
  readonly fetchSizes?: FetchSizes;
  /** Told how many times each batch was decided (1: everything it read was fetched with the lock). */
  readonly onBatch?: (rounds: number) => void;
  /** The most throttle keys kept (about; see `withThrottleKeys`), and how many reservations apart this node counts them. */
  readonly throttleBounds?: { readonly maxKeys: number; readonly checkEvery: number };
  /** How long a webhook delivery is attempted before it gives up (`webhooks.retentionHours`, in ms; default: the backoff's). */
  readonly webhookRetentionMs?: number | undefined;
};

const classify = (error: unknown): unknown =>
  isDiskFault(error) ? new StorageFault(`the PostgreSQL database cannot write: ${(error as Error).message}`) : error;

/** One advisory lock per key (hashed), taken in the order of the hashes so two transactions never wait on each other
 * in a circle. */
const lockKeys = (query: Query, space: number, keys: readonly string[]) =>
  query(sql`SELECT pg_advisory_xact_lock(${space}::int, h)
     FROM (SELECT DISTINCT hashtext(k) AS h FROM unnest(${[...keys]}::text[]) AS k ORDER BY h) AS locks`);

export type PostgresStore = StoreShape & {
  /** The connections (tests, the CLI). */
  readonly db: Db;
};

export const openPostgresStore = async (url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> => {
  const db = openDb(url, options.maxConnections ?? 8);
  const throttleBounds = options.throttleBounds ?? { maxKeys: maxThrottleKeys, checkEvery: 256 };
  try {
    await migrate(db, redactedUrl(url));
  } catch (error) {
    await db.end();
    throw error;
  }

  // Hearing other nodes' commits: LISTEN on a connection of its own, before the store is handed out (a listener added
  // at once hears every commit after it). It listens again after a lost connection; what was committed meanwhile was
  // not heard, so every listener is told then.
  const listeners = new Set<() => void>();
  let telling = false;
  const tell = () => {
    if (telling) return;
    telling = true;
    setImmediate(() => {
      telling = false;
      for (const listener of [...listeners]) listener();
    });
  };
  // An ask to reload (`airs models reload`) comes on the same channel, told apart by its payload (a commit's is its
  // last seq): one LISTEN connection per node hears both.
  const reloadListeners = new Set<() => void>();
  const heard = (payload: string | undefined) => {
    if (payload !== reloadAskedPayload) return tell();
    for (const listener of [...reloadListeners]) listener();
  };
  const listen = await db.listen(changesChannel, heard, tell);
  const notices: StoreNotices = {
    askReload: async () => {
      await db.query(sql`SELECT pg_notify(${changesChannel}, ${reloadAskedPayload})`);
    },
    onReloadAsked: (listener) => {
      reloadListeners.add(listener);
      return () => void reloadListeners.delete(listener);
    },
  };

  const reads = readsOf(db.query, (listener) => {
    listeners.add(listener);
    return () => void listeners.delete(listener);
  });

  // This handle's batches go one after another (as LMDB's single writer): the lock would serialise them anyway, and
  // waiting here holds no connection.
  let queue: Promise<unknown> = Promise.resolve();
  const commit = (batch: Batch): Promise<readonly (CommandOutcome | Error)[]> => {
    const run = queue.then(async () => {
      try {
        const { outcomes, rounds } = await db.begin((query) =>
          commitInTransaction(query, batch, options.fetchSizes, {
            webhookRetentionMs: options.webhookRetentionMs,
          }),
        );
        options.onBatch?.(rounds);
        return outcomes;
      } catch (error) {
        throw classify(error);
      }
    });
    queue = run.catch(() => {});
    return run;
  };

  const spend = async (spends: readonly Spend[]): Promise<readonly Decision[]> => {
    if (spends.length === 0) return [];
    return db.begin(async (query) => {
      const keys = [...new Set(spends.map((s) => JSON.stringify([s.accountId, s.budget])))];
      const [, , rows] = await Promise.all([
        query(sql`SET LOCAL synchronous_commit = off`),
        lockKeys(query, lockSpace.limiter, keys),
        query<{ account_id: string; budget: string; tat: number }[]>(sql`
          SELECT l.account_id, l.budget, l.tat FROM limiter l
          JOIN unnest(${spends.map((s) => s.accountId)}::text[], ${spends.map((s) => s.budget)}::text[]) AS u(account_id, budget)
            ON l.account_id = u.account_id AND l.budget = u.budget`),
      ]);
      const tats = new Map(rows.map((row) => [`${row.account_id}\u0000${row.budget}`, row.tat]));
      // spendAll writes each account and budget once, after its last spend.
      const changed: { accountId: string; budget: string; tat: number }[] = [];
      const decisions = spendAll(spends, {
        get: (accountId, budget) => tats.get(`${accountId}\u0000${budget}`),
        put: (accountId, budget, tat) => void changed.push({ accountId, budget, tat }),
      });
      if (changed.length > 0) {
        await query(sql`
          INSERT INTO limiter (account_id, budget, tat)
          SELECT * FROM unnest(${changed.map((r) => r.accountId)}::text[], ${changed.map((r) => r.budget)}::text[], ${changed.map((r) => r.tat)}::float8[])
          ON CONFLICT (account_id, budget) DO UPDATE SET tat = EXCLUDED.tat`);
      }
      return decisions;
    });
  };

  /**
   * Runs `decide` over the tries kept under `keys` (scoped), locked for the transaction, and writes its changes. The
   * table keeps its first name, `attempts` (a new name would change the schema).
   */
  const withThrottleKeys = <T>(
    scoped: readonly string[],
    now: number | undefined,
    decide: (table: ThrottleTable) => T,
  ) =>
    db.begin(async (query) => {
      // A scoped key holds a NUL (scope NUL key), which PostgreSQL's text cannot: stored as its JSON string.
      const keys = scoped.map((key) => JSON.stringify(key));
      const [, , rows] = await Promise.all([
        query(sql`SET LOCAL synchronous_commit = off`),
        lockKeys(query, lockSpace.throttle, keys),
        query<{ key: string; times: number[]; expires_at: number }[]>(sql`
          SELECT key, times, expires_at FROM attempts WHERE key = ANY(${[...keys]}::text[])`),
        // Before the reservation writes, pruneThrottleKeys's rule (storage/throttleCounts.ts) in SQL, in its order
        // (expires_at, key) and never a key of this reservation: keys whose tries all left their window go, a few
        // per reservation; then, while more than the bound are kept, the soonest to leave. Counting costs a scan, so
        // the bound is looked at only every `checkEvery` reservations; a key another writer has locked waits for a
        // later one.
        now === undefined
          ? Promise.resolve()
          : query(sql`DELETE FROM attempts WHERE key IN (
                SELECT key FROM attempts WHERE expires_at <= ${now} AND key <> ALL(${[...keys]}::text[])
                ORDER BY expires_at, key LIMIT ${throttlePrunePerReserve} FOR UPDATE SKIP LOCKED)`),
        now === undefined || reserves++ % throttleBounds.checkEvery !== 0
          ? Promise.resolve()
          : query(sql`DELETE FROM attempts WHERE key IN (
                SELECT key FROM attempts WHERE key <> ALL(${keys}::text[]) ORDER BY expires_at, key
                LIMIT GREATEST((SELECT count(*) FROM attempts) - ${throttleBounds.maxKeys}, 0) FOR UPDATE SKIP LOCKED)`),
      ]);
      const entries = new Map<string, ThrottleEntry>(
        rows.map((row) => [JSON.parse(row.key) as string, { times: row.times, expiresAt: row.expires_at }]),
      );
      const written = new Map<string, ThrottleEntry | undefined>();
      const result = decide({
        get: (key) => entries.get(key),
        put: (key, entry) => {
          entries.set(key, entry);
          written.set(key, entry);
        },
        remove: (key) => {
          entries.delete(key);
          written.set(key, undefined);
        },
      });
      const kept = [...written]
        .filter((entry): entry is [string, ThrottleEntry] => entry[1] !== undefined)
        .map(([key, entry]): [string, ThrottleEntry] => [JSON.stringify(key), entry]);
      const gone = [...written].filter(([, entry]) => entry === undefined).map(([key]) => JSON.stringify(key));
      await Promise.all([
        kept.length === 0
          ? Promise.resolve()
          : query(sql`
              INSERT INTO attempts (key, times, expires_at)
              SELECT key, times::json, expires_at
              FROM unnest(${kept.map(([key]) => key)}::text[], ${kept.map(([, e]) => JSON.stringify(e.times))}::text[], ${kept.map(([, e]) => e.expiresAt)}::bigint[])
                AS u(key, times, expires_at)
              ON CONFLICT (key) DO UPDATE SET times = EXCLUDED.times, expires_at = EXCLUDED.expires_at`),
        gone.length === 0 ? Promise.resolve() : query(sql`DELETE FROM attempts WHERE key = ANY(${gone}::text[])`),
      ]);
      return result;
    });
  let reserves = 0;

  const throttle: ThrottleCounter = {
    reserve: (ask: ThrottleAsk) =>
      withThrottleKeys(
        ask.keys.map((key) => scopedKey(ask.scope, key)),
        ask.now,
        (table) => reserveThrottlePlace(ask, table),
      ) as Promise<ReturnType<typeof reserveThrottlePlace>>,
    release: async (place: ThrottlePlace) => {
      await withThrottleKeys(
        place.keys.map((key) => scopedKey(place.scope, key)),
        undefined,
        (table) => releaseThrottlePlace(place, table),
      );
    },
    forget: async (scope: string, key: string) => {
      await withThrottleKeys([scopedKey(scope, key)], undefined, (table) => forgetThrottleKey(scope, key, table));
    },
  };

  let closed = false;
  return withConnectionFaults({
    db,
    reads,
    commit,
    // This handle's batches run one after another (above): the committer keeps the next one until then.
    batchesInFlight: 1,
    spend,
    throttle,
    files: postgresFileBytes(db.query),
    notices,
    close: async () => {
      if (closed) return;
      closed = true;
      listeners.clear();
      reloadListeners.clear();
      await queue;
      await listen.stop();
      await db.end();
    },
  });
};

/** The Store as a layer: opened when the layer is built, closed when its scope ends. */
export const PostgresStoreLayer = (url: string, options: PostgresStoreOptions = {}) =>
  Layer.effect(
    Store,
    Effect.acquireRelease(
      Effect.promise(() => openPostgresStore(url, options)),
      (store) => Effect.promise(() => store.close()),
    ),
  );
