import type { Database, RootDatabase } from 'lmdb';
import type { SessionState } from '../../domain/account/state.js';
import { accountCountsOfBatch, accountCountsOfFile } from '../../domain/accountCounters.js';
import { type BatchView, isFinalBatch } from '../../domain/batch/state.js';
import type { FileState } from '../../domain/file/state.js';
import { countersOf } from '../../domain/processingCounters.js';
import { countsAsQueued } from '../../domain/queuedCounter.js';
import {
  accountOpenBatchKeyOf,
  accountRequestKeyOf,
  accountRequestKindKeyOf,
  filePurposeKeyOf,
  type IndexKey,
  openBatchInputKeyOf,
} from '../../storage/projection.js';
import { decodeMap, decodeView, encodeMap } from './codec.js';

/**
 * The databases the migrations read and write, named here rather than imported from databases.ts (which opens them
 * and runs these migrations): the two files would otherwise import each other.
 */
type LmdbDatabases = {
  readonly root: RootDatabase;
  readonly meta: Database<number, string>;
  readonly requests: Database<Buffer, Buffer>;
  readonly sessions: Database<Buffer, string>;
  readonly batches: Database<Buffer, string>;
  readonly files: Database<Buffer, string>;
  readonly queuedCounts: Database<number, string>;
  readonly processingCounts: Database<number, string>;
  readonly accountCounts: Database<number, string>;
  readonly indexes: Readonly<
    Record<
      | 'dispatch'
      | 'accountRequests'
      | 'accountRequestsByKind'
      | 'accountSessions'
      | 'accountOpenBatches'
      | 'openBatchInputs'
      | 'accountFilesByPurpose',
      Database<string, IndexKey>
    >
  >;
};

/** Set once the index of requests by account holds the requests written before that index existed. */
export const accountRequestsIndexedKey = 'accountRequestsIndexed';

/**
 * Data directories written before `idx.accountRequests` existed have requests and no entries for them. The first
 * open builds the entries from the request records (the same function of the state the projection uses), in one
 * write transaction that also sets a marker, so it runs once per directory: a later open reads one meta value. A new
 * directory gets the marker at once. Two processes opening an old directory together build it once (the second finds
 * the marker inside its write transaction).
 */
export const indexAccountRequests = (dbs: LmdbDatabases): void => {
  if (dbs.meta.get(accountRequestsIndexedKey) !== undefined) return;
  dbs.root.transactionSync(() => {
    if (dbs.meta.get(accountRequestsIndexedKey) !== undefined) return;
    for (const { value } of dbs.requests.getRange({})) {
      const key = accountRequestKeyOf(decodeView(value));
      if (key !== undefined) dbs.indexes.accountRequests.put(key, '');
    }
    dbs.meta.put(accountRequestsIndexedKey, 1);
  });
};

/** In `meta`: 2 once `cnt.queued` counts only interactive requests (domain/queuedCounter.ts; 1: batch lines too, as
 * written before issue 41; absent: nothing counted, as written before the count existed). */
export const queuedCountedKey = 'queuedCounted';
const queuedCountedNow = 2;

/**
 * Data directories written before `cnt.queued` existed have requests waiting and no counts; those written before
 * issue 41 counted batch lines too, and a line that ends now takes nothing off (the count would stay too high for
 * good). The first open counts them again whole from the request records (by the projection's own rule), once, in the
 * same way as `indexAccountRequests` (a marker in the same transaction).
 */
export const countQueuedRequests = (dbs: LmdbDatabases): void => {
  if (dbs.meta.get(queuedCountedKey) === queuedCountedNow) return;
  dbs.root.transactionSync(() => {
    if (dbs.meta.get(queuedCountedKey) === queuedCountedNow) return;
    const counts = new Map<string, number>();
    for (const { value } of dbs.requests.getRange({})) {
      const state = decodeView(value);
      if (countsAsQueued(state)) counts.set(state.context.accountId, (counts.get(state.context.accountId) ?? 0) + 1);
    }
    for (const { key } of dbs.queuedCounts.getRange({})) dbs.queuedCounts.remove(key);
    for (const [accountId, count] of counts) dbs.queuedCounts.put(accountId, count);
    dbs.meta.put(queuedCountedKey, queuedCountedNow);
  });
};

/** Set once the index of sessions by account holds the sessions started before that index existed. */
export const accountSessionsIndexedKey = 'accountSessionsIndexed';

/**
 * Data directories written before `idx.accountSessions` existed have sessions and no entries for them: built once
 * from the session views, as `indexAccountRequests` does for requests.
 */
export const indexAccountSessions = (dbs: LmdbDatabases): void => {
  if (dbs.meta.get(accountSessionsIndexedKey) !== undefined) return;
  dbs.root.transactionSync(() => {
    if (dbs.meta.get(accountSessionsIndexedKey) !== undefined) return;
    for (const { value } of dbs.sessions.getRange({})) {
      const { accountId, sessionId } = decodeMap<SessionState>(value);
      dbs.indexes.accountSessions.put([accountId, sessionId], '');
    }
    dbs.meta.put(accountSessionsIndexedKey, 1);
  });
};

/** In `meta`: 2 once `cnt.processing` counts every counter of domain/processingCounters.ts (1: per model only, as
 * written before the per-account counters existed; absent: nothing counted, as written before the counts existed). */
export const processingCountedKey = 'processingCounted';
const processingCountedNow = 2;

/**
 * As `countQueuedRequests`, for the requests being processed, under each of their counters (per model, per account,
 * per account and model: what the bounds count). A data directory counted by an older version is counted again
 * whole, once.
 */
export const countProcessingRequests = (dbs: LmdbDatabases): void => {
  if (dbs.meta.get(processingCountedKey) === processingCountedNow) return;
  dbs.root.transactionSync(() => {
    if (dbs.meta.get(processingCountedKey) === processingCountedNow) return;
    const counts = new Map<string, number>();
    for (const { value } of dbs.requests.getRange({})) {
      const state = decodeView(value);
      if (state.status === 'processing')
        for (const counter of countersOf(state.context)) counts.set(counter, (counts.get(counter) ?? 0) + 1);
    }
    for (const { key } of dbs.processingCounts.getRange({})) dbs.processingCounts.remove(key);
    for (const [counter, count] of counts) dbs.processingCounts.put(counter, count);
    dbs.meta.put(processingCountedKey, processingCountedNow);
  });
};

/** How many requests wait in the dispatch index, kept in `meta` in the same transactions as the index: a submit asks
 * whether any request waits, and a point read costs far less than a cursor inside the batch's write. */
export const waitingCountKey = 'waiting';

/**
 * Data directories written before the waiting count existed (`waitingCountKey`) have entries in the dispatch index
 * and no count: the first open counts them, once (the count's presence is its own marker).
 */
export const countWaitingRequests = (dbs: LmdbDatabases): void => {
  if (dbs.meta.get(waitingCountKey) !== undefined) return;
  dbs.root.transactionSync(() => {
    if (dbs.meta.get(waitingCountKey) !== undefined) return;
    dbs.meta.put(waitingCountKey, dbs.indexes.dispatch.getCount({}));
  });
};

/** In `meta`: 2 once `cnt.account` counts every counter of domain/accountCounters.ts (1: open batches and bytes of
 * files, as written before files were counted; absent: nothing counted, as written before the counts existed). */
export const accountsCountedKey = 'accountsCounted';
const accountsCountedNow = 2;

/**
 * Data directories written before `cnt.account` existed have batches and files and no counts of them: the first open
 * counts each account's open batches, bytes of files kept and files kept from the batch and file views (by the same
 * functions the projection counts with), once, in the same way as `countQueuedRequests` (a marker in the same
 * transaction). A data directory counted by an older version is counted again whole, once.
 */
export const countAccounts = (dbs: LmdbDatabases): void => {
  if (dbs.meta.get(accountsCountedKey) === accountsCountedNow) return;
  dbs.root.transactionSync(() => {
    if (dbs.meta.get(accountsCountedKey) === accountsCountedNow) return;
    recountAccounts(dbs);
    dbs.meta.put(accountsCountedKey, accountsCountedNow);
  });
};

/** Counts every account's counters again from the batch and file views (inside the caller's write transaction). */
const recountAccounts = (dbs: LmdbDatabases): void => {
  const counts = new Map<string, number>();
  const add = ({ counter, count }: { counter: string; count: number }) =>
    counts.set(counter, (counts.get(counter) ?? 0) + count);
  for (const { value } of dbs.batches.getRange({}))
    for (const count of accountCountsOfBatch(decodeMap<BatchView>(value))) add(count);
  for (const { value } of dbs.files.getRange({}))
    for (const count of accountCountsOfFile(decodeMap<FileState>(value))) add(count);
  for (const { key } of dbs.accountCounts.getRange({})) dbs.accountCounts.remove(key);
  for (const [counter, count] of counts) if (count !== 0) dbs.accountCounts.put(counter, count);
};

/** Set once the batch views count their lines' answers, and the accounts' stored bytes hold them (issue 40). */
export const batchAnswersCountedKey = 'batchAnswersCounted';

/**
 * Data directories written before batches counted their lines' answers (`answerChars`, `keptAnswerChars`:
 * domain/batch/state.ts) have batch views without them and stored bytes without the answers: the first open counts
 * them from the request records (a completed line's answer, kept until it expired; what `countsDeltaOf` adds line by
 * line), writes every batch view with them, and counts every account's counters again, once, with a marker in the
 * same transaction (as `countQueuedRequests`). It runs before `countAccounts`, which it makes needless.
 */
export const countBatchAnswers = (dbs: LmdbDatabases): void => {
  if (dbs.meta.get(batchAnswersCountedKey) !== undefined) return;
  dbs.root.transactionSync(() => {
    if (dbs.meta.get(batchAnswersCountedKey) !== undefined) return;
    const answers = new Map<string, { answerChars: number; keptAnswerChars: number }>();
    for (const { value } of dbs.requests.getRange({})) {
      const { status, context } = decodeView(value);
      if (context.batchId === undefined || context.completedAt === undefined) continue;
      const sum = answers.get(context.batchId) ?? { answerChars: 0, keptAnswerChars: 0 };
      const chars = context.responseChars ?? 0;
      sum.answerChars += chars;
      if (status === 'completed') sum.keptAnswerChars += chars;
      answers.set(context.batchId, sum);
    }
    for (const { key, value } of Array.from(dbs.batches.getRange({}))) {
      const view = decodeMap<BatchView>(value);
      const sum = answers.get(key as string) ?? { answerChars: 0, keptAnswerChars: 0 };
      dbs.batches.put(key, encodeMap({ state: view.state, counts: { ...view.counts, ...sum } }));
    }
    recountAccounts(dbs);
    dbs.meta.put(batchAnswersCountedKey, 1);
    dbs.meta.put(accountsCountedKey, accountsCountedNow);
  });
};

/** Set once the index of files by account and purpose holds the files written before that index existed. */
export const filesByPurposeIndexedKey = 'filesByPurposeIndexed';

/**
 * Data directories written before `idx.accountFilesByPurpose` existed have files and no entries for them: built once
 * from the file views (by the projection's own key), as `indexAccountSessions` does for sessions.
 */
export const indexFilesByPurpose = (dbs: LmdbDatabases): void => {
  if (dbs.meta.get(filesByPurposeIndexedKey) !== undefined) return;
  dbs.root.transactionSync(() => {
    if (dbs.meta.get(filesByPurposeIndexedKey) !== undefined) return;
    for (const { value } of dbs.files.getRange({}))
      dbs.indexes.accountFilesByPurpose.put(filePurposeKeyOf(decodeMap<FileState>(value)), '');
    dbs.meta.put(filesByPurposeIndexedKey, 1);
  });
};

/** Set once the index of requests by account and kind holds the requests written before that index existed. */
export const requestsByKindIndexedKey = 'requestsByKindIndexed';

/**
 * Data directories written before `idx.accountRequestsByKind` existed have requests and no entries for them: built
 * once from the request records (by the projection's own key), as `indexAccountRequests` does.
 */
export const indexRequestsByKind = (dbs: LmdbDatabases): void => {
  if (dbs.meta.get(requestsByKindIndexedKey) !== undefined) return;
  dbs.root.transactionSync(() => {
    if (dbs.meta.get(requestsByKindIndexedKey) !== undefined) return;
    for (const { value } of dbs.requests.getRange({})) {
      const key = accountRequestKindKeyOf(decodeView(value));
      if (key !== undefined) dbs.indexes.accountRequestsByKind.put(key, '');
    }
    dbs.meta.put(requestsByKindIndexedKey, 1);
  });
};

/** Set once the open batches are indexed by account and by input file (`idx.accountOpenBatches`,
 * `idx.openBatchInputs`). */
export const openBatchesIndexedKey = 'openBatchesIndexed';

/**
 * Data directories written before the open batches were indexed by account kept them in `idx.openBatches` ([batchId] →
 * accountId), which the batch runner read oldest first, at most 1,000 at a time. The first open builds both new
 * indexes from the batch views (by the same key functions as the projection) and empties the old one, once, in the
 * same way as `indexAccountRequests` (a marker in the same transaction).
 */
export const indexOpenBatches = (dbs: LmdbDatabases): void => {
  if (dbs.meta.get(openBatchesIndexedKey) !== undefined) return;
  const old = dbs.root.openDB<string, IndexKey>({ name: 'idx.openBatches', create: false } as { name: string });
  dbs.root.transactionSync(() => {
    if (dbs.meta.get(openBatchesIndexedKey) !== undefined) return;
    for (const { value } of dbs.batches.getRange({})) {
      const view = decodeMap<BatchView>(value);
      if (isFinalBatch(view.state.status)) continue;
      dbs.indexes.accountOpenBatches.put(accountOpenBatchKeyOf(view), '');
      dbs.indexes.openBatchInputs.put(openBatchInputKeyOf(view), '');
    }
    // The old index, left empty rather than dropped: a named database cannot be dropped inside this transaction.
    if (old) for (const key of old.getKeys({})) old.remove(key);
    dbs.meta.put(openBatchesIndexedKey, 1);
  });
};
