import type { Decision } from '../../src/domain/rateLimit/gcra.js';
import type { StoredBytes } from '../../src/ports/FileBytes.js';
import type { Batch, CommandOutcome, Spend, StoreShape, ThrottleAsk, ThrottleRefused } from '../../src/ports/Store.js';

/**
 * What the storage contract suite (storeContract.ts) asks of an adapter: a small factory. Everything else the suite
 * does goes through the port alone (`commit`, `spend`, `reads`, `close`, and the work queue over `commit`), so a new
 * adapter runs the suite unchanged by writing one runner file that fills this in.
 */
export interface StoreFactory {
  /** The adapter's name, in the suite's title. */
  readonly name: string;
  /** A store over new, empty data of its own (a temporary directory, a fresh database or schema). */
  open(): Promise<StoreShape>;
  /**
   * Another handle on the data of `store`, as a second server process (or machine) holds it: each handle's writes
   * are decided against what every handle committed, and each reads what every handle committed. Where the data
   * lives in one object (memory), that object itself.
   */
  readonly another: Capability<(store: StoreShape) => Promise<StoreShape>>;
  /**
   * A store on the data of `store` in another operating-system process (a real child process: another server, the
   * CLI), which the test drives. Where the data cannot leave this process (memory), unsupported.
   */
  readonly anotherProcess: Capability<(store: StoreShape) => Promise<OtherProcess>>;
  /** Closes `store` and opens its data again, as a restarted server finds it. */
  readonly reopen: Capability<(store: StoreShape) => Promise<StoreShape>>;
  /** A store over new data on storage that fails on demand for a reason of the disk (full, read-only, failing). */
  readonly failingDisk: Capability<() => Promise<FailingDisk>>;
  /** Closes every handle it opened and removes their data; the suite calls it after each test. */
  dispose(): Promise<void>;
}

/** The writes of a store in another process, with their outcomes as that process's `commit` and `spend` gave them. */
export type OtherProcess = {
  commit(batch: Batch): Promise<readonly (CommandOutcome | Error)[]>;
  spend(spends: readonly Spend[]): Promise<readonly Decision[]>;
  reserveThrottlePlace(ask: ThrottleAsk): Promise<ThrottleRefused | undefined>;
  /** Writes `bytes` bytes made from `seed` (blobBytes.ts) as blob `blobId` through that process's store. */
  writeBlob(blobId: string, seed: string, bytes: number): Promise<StoredBytes>;
  /** A blob's size and digest as that process's store reads it. */
  digestBlob(blobId: string): Promise<StoredBytes | undefined>;
  /**
   * Commits `batch` in a process that this one waits for, blocked, until it has exited: when this returns, the commit
   * is durable and this process has run nothing meanwhile (no callback, no timer), as when news of a commit and a
   * read meet in one turn of the event loop.
   */
  commitBlocking(batch: Batch): readonly (CommandOutcome | Error)[];
};

/** A store whose storage fails from `fail()` until `recover()`. */
export type FailingDisk = {
  readonly store: StoreShape;
  /**
   * From now on, a write that needs more room than the storage had when it was called fails. (A full disk is the
   * fault every adapter can be given: a small write may still fit in space the store holds already.)
   */
  fail(): Promise<void>;
  /** Space (or the disk) is back. */
  recover(): Promise<void>;
};

/** Why an adapter cannot offer a capability: the suite skips the tests that need it, with this reason in their name. */
export type Unsupported = { readonly unsupported: string };

export type Capability<F> = F | Unsupported;

export const isUnsupported = <F>(capability: Capability<F>): capability is Unsupported =>
  typeof capability === 'object' && capability !== null && 'unsupported' in capability;
