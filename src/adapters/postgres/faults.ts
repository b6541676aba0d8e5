import {
  type ReadModel,
  StorageFault,
  type StoreShape,
  StoreUnreachable,
  type ThrottleCounter,
} from '../../ports/Store.js';
import { type Db, sql } from './db.js';

/*
 * A database that cannot be reached is the service being unavailable, not an internal error (contract 2 and 14): every
 * call of the store that fails because its connection was refused, lost or shut down rejects with a `StoreUnreachable`,
 * which the committer, the HTTP adapter and the readiness probe answer as LMDB's disk faults are answered (503 with
 * Retry-After). The pool opens a new connection for the next call (a pg client never reconnects by itself, so a call
 * that was on a lost connection fails rather than waits); LISTEN is taken up again on a connection of its own (db.ts).
 */

/** Node's socket errors for a connection that could not be made or was lost. */
const socketCodes = new Set([
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
]);

/**
 * What pg says, with no code, of a connection that went away: the socket closed under a client ('Connection terminated
 * unexpectedly'; 'Connection terminated' while it was being ended; the pool's '… due to connection timeout'), a query
 * asked of a client whose connection had failed, and the pool's and the client's own timeouts where they are set.
 */
const lostConnectionMessages = [
  /^Connection terminated\b/,
  /^Client has encountered a connection error and is not queryable$/,
  /^timeout exceeded when trying to connect$/,
  /^Query read timeout$/,
];

/**
 * Whether `error` says the database could not be reached rather than that a statement failed: a socket error, one of
 * pg's messages for a lost connection, or the server's SQLSTATE class 08 (connection exception) and 57P01 (admin
 * shutdown, also `pg_terminate_backend`), 57P02 (crash shutdown), 57P03 (cannot connect now: starting or stopping).
 * Looks into `cause` and an `AggregateError`'s errors (Node's connection to a name with several addresses).
 */
export const isConnectionLoss = (error: unknown, depth = 0): boolean => {
  if (typeof error !== 'object' || error === null || depth > 3) return false;
  const { code, message, cause, errors } = error as {
    code?: unknown;
    message?: unknown;
    cause?: unknown;
    errors?: unknown;
  };
  if (typeof code === 'string') {
    if (socketCodes.has(code) || code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03')
      return true;
  }
  if (typeof message === 'string' && lostConnectionMessages.some((pattern) => pattern.test(message))) return true;
  if (Array.isArray(errors) && errors.some((inner) => isConnectionLoss(inner, depth + 1))) return true;
  return cause !== undefined && isConnectionLoss(cause, depth + 1);
};

/** `error` as the store's callers should see it: a `StoreUnreachable` when the database could not be reached. */
export const connectionFault = (error: unknown): unknown =>
  error instanceof StorageFault || !isConnectionLoss(error)
    ? error
    : new StoreUnreachable(`the PostgreSQL database cannot be reached: ${(error as Error).message}`, { cause: error });

/** SQLSTATE classes and codes that say the database's storage, not the statement, failed. */
export const isDiskFault = (error: unknown): boolean => {
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return false;
  return code.startsWith('53') || code === '58030' || code === '25006';
};

const guarded =
  <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
  async (...args: A): Promise<R> => {
    try {
      return await call(...args);
    } catch (error) {
      throw connectionFault(error);
    }
  };

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
 * when the database ends connections: a NOTIFY sent while a node's LISTEN connection is between two lives is never
 * delivered to it (the store tells its listeners once it listens again, but a wake-up that a node of its own needed
 * meanwhile, such as a lease lapsing elsewhere, may come only from the next commit): at worst a node looks at the
 * queue a few seconds late, never never.
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
 * The store with every call that reaches the database classified (reads, batches, spends, throttle counts), and a `ping` for
 * the readiness probe. Errors of other kinds pass unchanged (a disk fault is already a `StorageFault`).
 */
export const withConnectionFaults = <S extends StoreShape & { readonly db: Db }>(store: S): S => {
  const reads = store.reads;
  const guardedReads = {} as Record<string, unknown>;
  for (const [name, read] of Object.entries(reads) as [keyof ReadModel, (...args: unknown[]) => unknown][]) {
    guardedReads[name] =
      name === 'events'
        ? guardedEvents(reads.events)
        : name === 'onChange'
          ? withBackstop(reads.onChange)
          : guarded((...args: unknown[]) => read.apply(reads, args) as Promise<unknown>);
  }
  const throttle: ThrottleCounter = {
    reserve: guarded((ask) => store.throttle.reserve(ask)),
    release: guarded((place) => store.throttle.release(place)),
    forget: guarded((scope, key) => store.throttle.forget(scope, key)),
  };
  return {
    ...store,
    reads: guardedReads as unknown as ReadModel,
    commit: guarded(store.commit),
    spend: guarded(store.spend),
    throttle,
    ping: guarded(async () => {
      await store.db.query(sql`SELECT 1`);
    }),
  };
};
