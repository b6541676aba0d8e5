import * as Context from 'effect/Context';
import type { QueuedEntry } from '../domain/claimFairly.js';
import type { Command, Refusal } from '../domain/commands.js';
import type { StoredEvent } from '../domain/events.js';
import type { Decision as LimitDecision } from '../domain/rateLimit/gcra.js';
import type { FileBytesShape } from './FileBytes.js';
import type { ReadModel } from './storeReads.js';
import type { ThrottleCounter } from './throttleCounter.js';

// The read model and the throttles' counts live in files of their own; importers keep reading them from here.
export {
  type DailyTokens,
  type DeliveryPage,
  type DueDeliveries,
  type DueDeliveriesAsk,
  type DueWork,
  type LapsedUpload,
  type ListName,
  type ListPage,
  type ModelQueue,
  maxListRows,
  type OpenBatch,
  type QueueDepths,
  type ReadModel,
  type RequestCursor,
  type RequestKind,
  type RequestPage,
  type StoredRequest,
  type UsageRange,
  type WebhookBacklog,
} from './storeReads.js';
export type { ThrottleAsk, ThrottleCounter, ThrottlePlace, ThrottleRefused } from './throttleCounter.js';
export type { QueuedEntry };

/**
 * The store, in three parts, the same for every adapter (LMDB on disk, PostgreSQL, in memory) and held to one
 * contract suite (test/contract):
 *
 * - the event log: `commit` decides a batch of commands and appends their events durably, each decided against the
 *   state the store holds at commit time, whoever wrote it; rate-limit spending (`spend`) is decided inside a write
 *   too, so it is exact across writers;
 * - the read model (`reads`): views and the log, each read seeing everything committed before it began, by any
 *   process; `onChange` tells when another writer (or this one) changed something;
 * - the work queue: named moves that are commands of the log (domain/claim.ts and the request machine): `Claim`
 *   (take due work with an owner and a lease), `ExtendLease`, `RecordSuccess` / `RecordFailure` (recorded only while
 *   the lease is held: fencing), `Release`. app/processing/workQueue.ts is their typed client.
 */

/** When an API key was last used (ms): operational state saved with the batches, not an event. */
export type KeyUseEntry = { readonly keyId: string; readonly at: number };

/** What a command of a batch came to: the events it appended, or why it appended nothing. */
export type CommandOutcome =
  | {
      readonly events: readonly StoredEvent[];
      /** A submit whose idempotency key made this request before: nothing was appended. */
      readonly replayOf?: string;
    }
  | Refusal;

/** One durable write: commands decided in order, plus key uses that ride along (not events: not in the log). */
export type Batch = {
  readonly commands: readonly Command[];
  readonly keyUses?: readonly KeyUseEntry[];
};

/** One call spending one unit of an account's budget of `limit` calls per `windowMs`. */
export type Spend = {
  readonly accountId: string;
  readonly budget: string;
  readonly limit: number;
  readonly windowMs: number;
  readonly now: number;
};

/**
 * What one commit means to a worker pool, read once from its events where it was committed (app/processing/wakeups.ts):
 * work may have become due (a request queued, retried, given back), a model's place may have freed (a request ended),
 * these requests were cancelled (a model call running for one of them stops).
 */
export type CommitSummary = {
  readonly workDue: boolean;
  readonly freed: boolean;
  readonly cancelled: readonly string[];
};

/**
 * Where one process commits for several (`serve --processes N` on LMDB: the primary), each of them hears every commit
 * as a summary, computed once by the writer, instead of re-reading the store to learn what changed.
 */
export interface SharedWriterChanges {
  /** Hears each commit of the shared writer, any process's commands, once it is durable. */
  onCommit(listener: (summary: CommitSummary) => void): () => void;
  /** Hears writes from outside the processes that share the writer (an `airs` command): those need a full look. */
  onForeignChange(listener: () => void): () => void;
}

export interface StoreShape {
  readonly reads: ReadModel;
  /** Set where commits go through a writer shared with other processes (see SharedWriterChanges). `reads.onChange`
   * still hears every change, commits by the writer included, gathered. */
  readonly sharedWriter?: SharedWriterChanges;
  /**
   * Decides and appends a batch of commands in **one** write transaction (views and indexes in the same
   * transaction), each decided against the state the store holds when it is written and the commands before it in
   * the batch, and resolves once that transaction is durable. A refused command is an outcome; a command whose
   * deciding throws is a rejected outcome of its own; neither touches the others. An I/O failure rejects the whole
   * batch: nothing of it was written; when the disk is the cause (full, read-only, failing), the rejection is a
   * `StorageFault`, and the same batch may succeed later.
   */
  commit(batch: Batch): Promise<readonly (CommandOutcome | Error)[]>;
  /**
   * How many batches are worth handing to `commit` before the first is durable (default 2: LMDB writes the next while
   * the disk flushes the last). A store whose batches run strictly one after another says 1: a second batch handed
   * over early would only wait, holding the few commands of one turn, where waiting in the committer lets it take
   * everything that came meanwhile.
   */
  readonly batchesInFlight?: number;
  /**
   * Spends rate-limit budgets, each decided (GCRA) against the state the store holds at that moment, whoever spent
   * before: exact across processes and servers. Not durable like the log: after a crash of the machine a budget may
   * start whole again.
   */
  spend(spends: readonly Spend[]): Promise<readonly LimitDecision[]>;
  /** The login and signup throttles' counts (decided inside a write of the store, like `spend`). */
  readonly throttle: ThrottleCounter;
  /** Uploaded files' bytes (ports/FileBytes.ts), kept beside the log that names them. */
  readonly files: FileBytesShape;
  /**
   * One round trip to a store on another machine (a database server), for the readiness probe: rejects with a
   * `StoreUnreachable` while it cannot be reached. A store on this machine's disk has none.
   */
  readonly ping?: () => Promise<void>;
  /**
   * Lease owners' names, and which of them are known to be of processes that no longer exist: a store on this
   * machine's disk (LMDB: one machine, one data directory) can tell; a store that servers on other machines share
   * (PostgreSQL) has none, and its leases only lapse.
   */
  readonly owners?: LeaseOwners;
  /** Notices to every server of this store (StoreNotices); a store no server shares (memory) has none. */
  readonly notices?: StoreNotices;
  close(): Promise<void>;
}

/**
 * Asks that every server of this store hears (LMDB: every process on the data directory; PostgreSQL: every node),
 * beside the log: they change nothing of the product's state, so they are no event. Heard within a second or so, by
 * the servers running then; one that starts later reads its config anyway.
 */
export interface StoreNotices {
  /** Asks every server to read its config file again and apply its `models` and `plans` (`airs models reload`). */
  askReload(): Promise<void>;
  /** Hears each ask made after this call. Returns the way to stop hearing. */
  onReloadAsked(listener: () => void): () => void;
}

/**
 * Names for the leases of this process (its workers', its batch runner's) that tell which process took them, and
 * whether the process behind a name is gone. `gone` answers true only when that is known: a process that still
 * exists, a name it cannot read, a process it cannot see (another machine, another PID namespace) are not gone.
 */
export interface LeaseOwners {
  /** A new owner name for a part of this process (`proc`, `batches`), unique to it. */
  name(part: string): string;
  /** Whether the process that took leases under `owner` is known to no longer exist. */
  gone(owner: string): boolean;
}

/** A write failed because of the disk under the store (full, read-only, I/O errors), not because of the batch. */
export class StorageFault extends Error {
  override name = 'StorageFault';
}

/**
 * The store could not be reached: a database server that refused or lost the connection, shut down or restarting.
 * Nothing of the call was acknowledged (a write may or may not have been committed: its caller was not told it was);
 * the same call may succeed once the store is back, which the adapter reconnects to by itself.
 */
export class StoreUnreachable extends StorageFault {
  override name = 'StoreUnreachable';
}

/** The event log, the read model and the work queue. Live: LMDB on disk (adapters/lmdb). */
export class Store extends Context.Service<Store, StoreShape>()('airs/Store') {}
