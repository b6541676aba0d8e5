import type { Sql } from 'postgres';
import {
  type AttemptCounter,
  type ReadModel,
  StorageFault,
  type StoreShape,
  StoreUnreachable,
} from '../../ports/Store.js';

/*
 * A database that cannot be reached is the service being unavailable, not an internal error (contract 2 and 14): every
 * call of the store that fails because its connection was refused, lost or shut down rejects with a `StoreUnreachable`,
 * which the committer, the HTTP adapter and the readiness probe answer as LMDB's disk faults are answered (503 with
 * Retry-After). postgres.js reconnects by itself on the next query; LISTEN is taken up again by its own connection.
 */

/** Node's socket errors and postgres.js's own codes for a connection that could not be made or was lost. */
const connectionCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
]);

/**
 * Whether `error` says the database could not be reached rather than that a statement failed: a socket error, a
 * connection postgres.js saw close, or the server's SQLSTATE class 08 (connection exception) and 57P01 (admin
 * shutdown, also `pg_terminate_backend`), 57P02 (crash shutdown), 57P03 (cannot connect now: starting or stopping).
 */
export const isConnectionLoss = (error: unknown): boolean => {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return false;
  return connectionCodes.has(code) || code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03';
};

/** `error` as the store's callers should see it: a `StoreUnreachable` when the database could not be reached. */
export const connectionFault = (error: unknown): unknown =>
  error instanceof StorageFault || !isConnectionLoss(error)
    ? error
    : new StoreUnreachable(`the PostgreSQL database cannot be reached: ${(error as Error).message}`);

/**
 * postgres.js waits before it connects again after a failed connection, `(0.5..1) × 3^retries / 100` seconds, counted
 * over the whole pool and capped at 20 s: after an outage of a few seconds a node would stay away for up to 20 s more
 * (every query waits for that reconnection). Capped at 1 s instead: a node is back within a second of its database.
 */
export const reconnectBackoff = (retries: number): number =>
  (0.5 + Math.random() / 2) * Math.min(3 ** retries / 100, 1);

/**
 * How long a new connection may take to open (postgres.js's default: 30 s). A connection whose backend was ended while
 * it started up can stall until then, with the queries waiting for it: seen after `pg_terminate_backend` under load.
 * A local or same-datacentre database opens a connection in milliseconds.
 */
export const connectTimeoutSeconds = 5;

const guarded =
  <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
  async (...args: A): Promise<R> => {
    try {
      return await call(...args);
    } catch (error) {
      throw connectionFault(error);
    }
  };

/**
 * How long a read (or a spend, or a throttle's count) may wait for its answer. postgres.js 3.4.9 leaves a few queries
 * pending for ever when the database ends connections under load (seen with `pg_terminate_backend` every 50-150 ms:
 * 2 to 5 of thousands); a caller awaiting one (the dispatcher's look at the queue) would wait for ever. These calls
 * change nothing durable, so giving up on one is safe: it fails as `StoreUnreachable` and its caller tries again.
 * Batches are not timed out: one may still commit, and their callers wait for the truth.
 */
export const readTimeoutMs = 10_000;

/**
 * How long a batch's transaction may go unanswered before it is given up (its callers get 503). postgres.js 3.4.9 can
 * strand a transaction whose connection the database ended at the wrong moment (seen under repeated
 * `pg_terminate_backend`): its promise never settles, and every later batch of the node waits behind it. A batch takes
 * milliseconds; one given up may still have committed (its callers were told 503, never 202), and a session the server
 * still holds ends with its connection.
 */
export const strandedCommitMs = 20_000;

/** `commit`, or a `StoreUnreachable` once it has gone unanswered for `strandedCommitMs`. */
export const unlessStranded = <R>(commit: Promise<R>): Promise<R> =>
  new Promise<R>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(new StoreUnreachable(`the PostgreSQL database did not answer a batch in ${strandedCommitMs / 1000} s`)),
      strandedCommitMs,
    );
    timer.unref();
    commit.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });

const timed =
  <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
  (...args: A): Promise<R> =>
    new Promise<R>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new StoreUnreachable(`the PostgreSQL database did not answer in ${readTimeoutMs / 1000} s`)),
        readTimeoutMs,
      );
      timer.unref();
      guarded(call)(...args).then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });

/** The log's pages, each read's failure classified. */
const guardedEvents =
  (events: ReadModel['events']): ReadModel['events'] =>
  (fromSeq) => ({
    [Symbol.asyncIterator]: () => {
      const inner = events(fromSeq)[Symbol.asyncIterator]();
      return {
        next: guarded(() => inner.next()),
        return: async (value?: unknown) => (await inner.return?.(value)) ?? { done: true, value: undefined },
      };
    },
  });

/** How often listeners of changes are told anyway, as LMDB's slow poll does: a backstop for a wake-up that was lost. */
export const backstopMs = 5_000;

/**
 * `onChange` that also tells its listeners every `backstopMs`. NOTIFY is the wake-up across nodes, but one can be lost
 * when the database ends connections under load (a commit whose answer never came, a LISTEN connection between two
 * lives; seen in the `pg_terminate_backend` test as a lapsed lease nobody took up): at worst a node looks at the queue
 * a few seconds late, never never.
 */
const withBackstop = (onChange: ReadModel['onChange']): ReadModel['onChange'] => {
  const listeners = new Set<() => void>();
  let timer: NodeJS.Timeout | undefined;
  return (listener) => {
    const stop = onChange(listener);
    listeners.add(listener);
    timer ??= setInterval(() => {
      for (const each of [...listeners]) each();
    }, backstopMs).unref();
    return () => {
      stop();
      listeners.delete(listener);
      if (listeners.size === 0 && timer !== undefined) {
        clearInterval(timer);
        timer = undefined;
      }
    };
  };
};

/**
 * The store with every call that reaches the database classified (reads, batches, spends, attempts), and a `ping` for
 * the readiness probe. Errors of other kinds pass unchanged (a disk fault is already a `StorageFault`).
 */
export const withConnectionFaults = <S extends StoreShape & { readonly sql: Sql }>(store: S): S => {
  // The array types were fetched by the pool's first connection (the migrations ran on it), into what the pool's
  // connections share. postgres.js fetches them again on every new connection, and a connection ended during that
  // fetch strands the fetch and the query that opened it: the later connections skip it.
  (store.sql.options as unknown as { fetch_types: boolean }).fetch_types = false;
  const reads = store.reads;
  const guardedReads = {} as Record<string, unknown>;
  for (const [name, read] of Object.entries(reads) as [keyof ReadModel, (...args: unknown[]) => unknown][]) {
    guardedReads[name] =
      name === 'events'
        ? guardedEvents(reads.events)
        : name === 'onChange'
          ? withBackstop(reads.onChange)
          : timed((...args: unknown[]) => read.apply(reads, args) as Promise<unknown>);
  }
  const attempts: AttemptCounter = {
    reserve: timed((ask) => store.attempts.reserve(ask)),
    release: timed((place) => store.attempts.release(place)),
    forget: timed((scope, key) => store.attempts.forget(scope, key)),
  };
  return {
    ...store,
    reads: guardedReads as unknown as ReadModel,
    commit: guarded(store.commit),
    spend: timed(store.spend),
    attempts,
    ping: timed(async () => {
      await store.sql`SELECT 1`;
    }),
  };
};
