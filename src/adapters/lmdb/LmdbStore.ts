import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Effect, Layer } from 'effect';
import { type Database, open, type RootDatabase } from 'lmdb';
import type { AccountState, KeyState } from '../../domain/account/state.js';
import { type Command, type DecisionReads, decideCommand, isRefusal } from '../../domain/commands.js';
import type { StoredEvent } from '../../domain/events.js';
import type { RequestState } from '../../domain/request/state.js';
import { type Batch, type CommandOutcome, Store, type StoreReads, type StoreShape } from '../../ports/Store.js';
import { type IndexKey, type IndexName, project, type ViewAccess } from './projection.js';
import { createWrittenStates } from './writtenStates.js';

type Key = IndexKey;

/** The named databases of one LMDB environment: the log, the views and their indexes, and the text payloads. */
export type LmdbDatabases = {
  readonly root: RootDatabase;
  readonly events: Database<StoredEvent, number>;
  readonly requests: Database<RequestState, string>;
  readonly payloads: Database<string, Key>;
  readonly accounts: Database<AccountState, string>;
  readonly keys: Database<KeyState, string>;
  /** Rate-limiter states by [accountId, budget]: operational state saved with the batches, not part of the log. */
  readonly limiter: Database<number, Key>;
  /** Single values kept beside the views: `accountsVersion`, the number of account and key events so far. */
  readonly meta: Database<number, string>;
  readonly indexes: Readonly<Record<IndexName, Database<string | null, Key>>>;
};

export const accountsVersionKey = 'accountsVersion';

export const environmentFile = (dataDir: string) => join(dataDir, 'airs.mdb');

export const openDatabases = (dataDir: string): LmdbDatabases => {
  mkdirSync(dataDir, { recursive: true });
  // overlappingSync off: a commit becomes visible only once it is on disk, so no reader (a poll, another process)
  // ever sees a state that a power cut could take back. Measured here: no loss of group-commit throughput.
  const root = open({ path: environmentFile(dataDir), maxDbs: 16, overlappingSync: false });
  const db = <V, K extends Key>(name: string) => root.openDB<V, K>({ name });
  return {
    root,
    events: db('events'),
    requests: db('requests'),
    payloads: db('payloads'),
    accounts: db('accounts'),
    keys: db('keys'),
    limiter: db('limiter'),
    meta: db('meta'),
    indexes: {
      dispatch: db('idx.dispatch'),
      expiry: db('idx.expiry'),
      emails: db('idx.emails'),
      keyHashes: db('idx.keyHashes'),
      accountKeys: db('idx.accountKeys'),
    },
  };
};

const firstKey = (keys: Iterable<Key>): Key | undefined => {
  for (const key of keys) return key;
  return undefined;
};

/** The first account in the dispatch index at or after `from` (each hop skips one account's whole range). */
const accountFrom = (dbs: LmdbDatabases, from: string): string | undefined => {
  const key = firstKey(dbs.indexes.dispatch.getKeys({ start: [from], limit: 1 }));
  return key === undefined ? undefined : (key as [string])[0];
};

function* queuedAccounts(dbs: LmdbDatabases, after: string | undefined): Iterable<string> {
  const next = (account: string) => accountFrom(dbs, `${account}\u0000`);
  let account = after === undefined ? accountFrom(dbs, '') : next(after);
  while (account !== undefined) {
    yield account;
    account = next(account);
  }
  if (after === undefined) return;
  // Wrap round: the accounts before and including `after`.
  account = accountFrom(dbs, '');
  while (account !== undefined && account <= after) {
    yield account;
    account = next(account);
  }
}

const readsOf = (dbs: LmdbDatabases): StoreReads => ({
  refresh: () => dbs.root.resetReadTxn(),
  request: (reqId) => dbs.requests.get(reqId),
  payload: (reqId, kind) => dbs.payloads.get([reqId, kind]),
  account: (accountId) => dbs.accounts.get(accountId),
  accountIdByEmail: (email) => dbs.indexes.emails.get(email) ?? undefined,
  accounts: () => dbs.accounts.getRange({}).map(({ value }) => value),
  key: (keyId) => dbs.keys.get(keyId),
  keyIdByHash: (keyHash) => dbs.indexes.keyHashes.get(keyHash) ?? undefined,
  keysOf: (accountId) =>
    Array.from(dbs.indexes.accountKeys.getKeys({ start: [accountId], end: [`${accountId}\u0000`] }))
      .map((key) => dbs.keys.get((key as [string, string])[1]))
      .filter((key): key is KeyState => key !== undefined),
  queuedAccounts: (after) => queuedAccounts(dbs, after),
  queuedOf: (accountId) =>
    dbs.indexes.dispatch.getRange({ start: [accountId], end: [`${accountId}\u0000`] }).map(({ key, value }) => {
      const [, availableAt, reqId] = key as [string, number, string];
      return { reqId, availableAt, model: value ?? '' };
    }),
  dueForExpiry: (now, limit) =>
    Array.from(dbs.indexes.expiry.getKeys({ end: [now + 1], limit }), (key) => (key as [number, string])[1]),
  events: (fromSeq = 1) => dbs.events.getRange({ start: fromSeq }).map(({ value }) => value),
  lastSeq: () => (firstKey(dbs.events.getKeys({ reverse: true, limit: 1 })) as number | undefined) ?? 0,
  limiterState: (accountId, budget) => dbs.limiter.get([accountId, budget]),
  accountsVersion: () => dbs.meta.get(accountsVersionKey) ?? 0,
});

type WrittenStates = ReturnType<typeof createWrittenStates>;

/** The projection's view access, writing through the open transaction. */
const viewsOf = (dbs: LmdbDatabases, written: WrittenStates): ViewAccess => ({
  getRequest: (reqId) => written.get(reqId) ?? dbs.requests.get(reqId),
  putRequest: (reqId, state) => {
    written.set(reqId, state);
    dbs.requests.put(reqId, state);
  },
  getAccount: (accountId) => dbs.accounts.get(accountId),
  putAccount: (accountId, state) => void dbs.accounts.put(accountId, state),
  getKey: (keyId) => dbs.keys.get(keyId),
  putKey: (keyId, state) => void dbs.keys.put(keyId, state),
  putIndex: (index, key, value) => void dbs.indexes[index].put(key, value),
  removeIndex: (index, key) => void dbs.indexes[index].remove(key),
  bumpAccountsVersion: () => void dbs.meta.put(accountsVersionKey, (dbs.meta.get(accountsVersionKey) ?? 0) + 1),
  removePayloads: (reqId) => {
    dbs.payloads.remove([reqId, 'prompt']);
    dbs.payloads.remove([reqId, 'response']);
  },
});

/** Reads made while a batch is being written: through the open write transaction, so each command sees the ones
 * before it in the same batch. */
const decisionReadsOf = (dbs: LmdbDatabases, written: WrittenStates): DecisionReads => ({
  request: (reqId) => written.get(reqId) ?? dbs.requests.get(reqId),
  account: (accountId) => dbs.accounts.get(accountId),
  key: (keyId) => dbs.keys.get(keyId),
  accountIdByEmail: (email) => dbs.indexes.emails.get(email) ?? undefined,
});

/** Request states kept from one command to the next (see writtenStates.ts). */
const writtenStatesLimit = 20_000;

export type LmdbStore = StoreShape & { readonly databases: LmdbDatabases };

/** Opens (creating if needed) the LMDB environment under `dataDir` as the product's Store. */
export const openLmdbStore = (dataDir: string): LmdbStore => {
  const dbs = openDatabases(dataDir);
  const reads = readsOf(dbs);
  const written = createWrittenStates(writtenStatesLimit);
  const views = viewsOf(dbs, written);
  const decisionReads = decisionReadsOf(dbs, written);

  const applyCommand = (command: Command, nextSeq: () => number): CommandOutcome | Error => {
    let decision: ReturnType<typeof decideCommand>;
    try {
      decision = decideCommand(decisionReads, command);
    } catch (error) {
      // A faulty command wrote nothing yet (deciding is pure): it fails alone.
      return error instanceof Error ? error : new Error(String(error));
    }
    if (isRefusal(decision)) return decision;
    const events = decision.events.map((event) => {
      const stored: StoredEvent = { ...event, seq: nextSeq() };
      dbs.events.put(stored.seq, stored);
      project(views, event);
      return stored;
    });
    for (const { reqId, kind, text } of decision.payloads) dbs.payloads.put([reqId, kind], text);
    return { events };
  };

  const commit = async (batch: Batch): Promise<readonly (CommandOutcome | Error)[]> => {
    let seq = 0;
    try {
      // One write transaction for the whole batch. It is a child transaction of lmdb-js's write batch so that a
      // fault while writing (not a refusal: those are values) aborts all of it rather than committing half. With
      // overlappingSync off, the promise resolves only once the commit is synced to disk.
      const outcomes = await dbs.root.childTransaction(() => {
        // The sequence number is read once per batch, inside the write transaction: the CLI, writing to the same
        // environment from another process, can never take the same numbers.
        seq = reads.lastSeq();
        written.beginBatch(seq);
        const nextSeq = () => ++seq;
        const outcomes = batch.commands.map((command) => applyCommand(command, nextSeq));
        for (const { accountId, budget, tat } of batch.limiterStates ?? []) dbs.limiter.put([accountId, budget], tat);
        return outcomes;
      });
      written.committed(seq);
      return outcomes;
    } catch (error) {
      written.failed();
      throw error;
    }
  };

  return { databases: dbs, reads, commit, close: () => dbs.root.close() };
};

/** The Store as a layer: opened when the layer is built, closed when its scope ends. */
export const LmdbStoreLayer = (dataDir: string) =>
  Layer.effect(
    Store,
    Effect.acquireRelease(
      Effect.sync(() => openLmdbStore(dataDir)),
      (store) => Effect.promise(() => store.close()),
    ),
  );
