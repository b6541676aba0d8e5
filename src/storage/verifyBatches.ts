import { isDeepStrictEqual } from 'node:util';
import { accountCountsOfBatch, accountCountsOfFile } from '../domain/accountCounters.js';
import type { BatchEvent } from '../domain/batch/events.js';
import { countsDeltaOf } from '../domain/batch/lines.js';
import {
  type BatchCounts,
  type BatchState,
  type BatchView,
  canApplyToBatch,
  evolveBatch,
  initialBatchState,
  isFinalBatch,
  noCounts,
} from '../domain/batch/state.js';
import { type FileEvent, isUploadEvent } from '../domain/file/events.js';
import { evolveFile, type FileState } from '../domain/file/state.js';
import { type AccountUploads, evolveUploads } from '../domain/file/uploads.js';
import type { RequestStatus } from '../domain/request/state.js';
import {
  accountBatchKeyOf,
  accountFileKeyOf,
  accountOpenBatchKeyOf,
  filePurposeKeyOf,
  type IndexKey,
  openBatchInputKeyOf,
} from './projection.js';
import { keyText } from './verifyReport.js';

type MutableCounts = { -readonly [K in keyof BatchCounts]: BatchCounts[K] };
/** A batch as rebuilt: its state, and its lines' counts added to in place (a batch has thousands of lines). */
type RebuiltBatch = { state: BatchState; readonly counts: MutableCounts };

/** A line's state after an event, as much of it as its batch's counts read. */
type LineState = {
  readonly status: RequestStatus;
  readonly context: {
    readonly inputTokens?: number | undefined;
    readonly outputTokens?: number | undefined;
    readonly responseChars?: number | undefined;
  };
};

/**
 * Batches and files rebuilt from the log, for `replay --verify` on either store. Batches are folded by the machine's
 * own step (`evolveBatch`); their counts by the rule the write path applies (`countsDeltaOf`, writeBatch.ts), fed each
 * line's status before and after each of its events. Batches and files are few beside requests: kept in maps.
 */
export const createBatchFileFold = () => {
  const batches = new Map<string, RebuiltBatch>();
  const files = new Map<string, FileState>();
  /** Accounts' uploads whose reservation has not ended, by account. */
  const uploads = new Map<string, AccountUploads>();
  /** Files the log made and then deleted: a view stored for one is named as such. */
  const deletedFiles = new Set<string>();
  /** The line's state before the event, as much as the rule reads: one object, reused. */
  const previous: { status: RequestStatus } = { status: 'none' };
  // A batch's lines mostly come in a row: the last batch is kept at hand rather than looked up per event.
  let lastId: string | undefined;
  let last: RebuiltBatch | undefined;
  const batchOf = (batchId: string): RebuiltBatch => {
    if (batchId === lastId && last !== undefined) return last;
    let batch = batches.get(batchId);
    if (batch === undefined) {
      batch = {
        state: initialBatchState,
        counts: { ...noCounts },
      };
      batches.set(batchId, batch);
    }
    lastId = batchId;
    last = batch;
    return batch;
  };
  return {
    batches: batches as ReadonlyMap<string, { readonly state: BatchState; readonly counts: BatchCounts }>,
    files: files as ReadonlyMap<string, FileState>,
    uploads: uploads as ReadonlyMap<string, AccountUploads>,
    deletedFiles: deletedFiles as ReadonlySet<string>,
    /** A line of `batchId` moved from `before` to `after` (one event): what that adds to the batch's counts. */
    line(batchId: string, before: RequestStatus, after: LineState): void {
      if (before === after.status) return;
      previous.status = before;
      const delta = countsDeltaOf(previous, after);
      if (delta === undefined) return;
      const { counts } = batchOf(batchId);
      counts.queued += delta.queued;
      counts.completed += delta.completed;
      counts.failed += delta.failed;
      counts.inputTokens += delta.inputTokens;
      counts.outputTokens += delta.outputTokens;
      counts.answerChars += delta.answerChars;
      counts.keptAnswerChars += delta.keptAnswerChars;
    },
    /** Folds a batch's event; false when the machine does not accept it (the decider emits none such). */
    batchEvent(event: BatchEvent): boolean {
      const batch = batchOf(event.batchId);
      if (!canApplyToBatch(batch.state, event)) return false;
      batch.state = evolveBatch(batch.state, event);
      return true;
    },
    fileEvent(event: FileEvent): void {
      if (isUploadEvent(event)) {
        const held = evolveUploads(uploads.get(event.accountId), event);
        if (held === undefined) uploads.delete(event.accountId);
        else uploads.set(event.accountId, held);
        return;
      }
      const after = evolveFile(files.get(event.fileId), event);
      if (after === undefined) {
        if (files.delete(event.fileId)) deletedFiles.add(event.fileId);
      } else files.set(event.fileId, after);
    },
  };
};

export type BatchFileFold = ReturnType<typeof createBatchFileFold>;

/** What a store holds of batches and files, as it stores them (views decoded; index keys as arrays). */
export type StoredBatchFileViews = {
  readonly batches: Iterable<{ readonly id: string; readonly view: BatchView }>;
  readonly files: Iterable<{ readonly id: string; readonly view: FileState }>;
  readonly accountBatches: Iterable<{ readonly key: IndexKey; readonly value: string }>;
  readonly accountFiles: Iterable<{ readonly key: IndexKey; readonly value: string }>;
  readonly accountOpenBatches: Iterable<{ readonly key: IndexKey; readonly value: string }>;
  readonly openBatchInputs: Iterable<{ readonly key: IndexKey; readonly value: string }>;
  readonly accountFilesByPurpose: Iterable<{ readonly key: IndexKey; readonly value: string }>;
  /** Accounts' uploads whose reservation has not ended, by account id. */
  readonly uploads: Iterable<{ readonly id: string; readonly view: AccountUploads }>;
  /** The accounts' counters (domain/accountCounters.ts), counter → count. */
  readonly accountCounts: Iterable<{ readonly key: IndexKey; readonly value: number }>;
};

/** The accounts' counters the batches and files call for (domain/accountCounters.ts), none at zero. */
export const accountCountsOf = (
  batches: Iterable<BatchView>,
  files: Iterable<FileState>,
): ReadonlyMap<string, number> => {
  const counts = new Map<string, number>();
  const add = ({ counter, count }: { counter: string; count: number }) =>
    counts.set(counter, (counts.get(counter) ?? 0) + count);
  for (const view of batches) for (const count of accountCountsOfBatch(view)) add(count);
  for (const file of files) for (const count of accountCountsOfFile(file)) add(count);
  for (const [counter, count] of counts) if (count === 0) counts.delete(counter);
  return counts;
};

/** A counter's name as a difference names it: `batches of acct_1`, `fileBytes of acct_1`. */
const counterText = (counter: string) => counter.replace('\u001f', ' of ');

/** The stored accounts' counters against those the log calls for, both ways (a count of zero is no entry). */
export const compareAccountCounts = (
  stored: Iterable<{ readonly key: IndexKey; readonly value: number }>,
  rebuilt: ReadonlyMap<string, number>,
  differ: (message: string) => void,
): void => {
  const seen = new Set<string>();
  for (const { key, value } of stored) {
    const counter = String(key);
    if (value === 0) continue;
    seen.add(counter);
    const wanted = rebuilt.get(counter) ?? 0;
    if (wanted !== value) differ(`account count ${counterText(counter)}: stored ${value} but the log gives ${wanted}`);
  }
  for (const [counter, count] of rebuilt)
    if (!seen.has(counter)) differ(`account count ${counterText(counter)}: stored 0 but the log gives ${count}`);
};

const countsText = (c: BatchCounts) =>
  `queued ${c.queued}, completed ${c.completed}, failed ${c.failed}, tokens ${c.inputTokens}/${c.outputTokens}, ` +
  `answers ${c.answerChars} characters (${c.keptAnswerChars} kept)`;
const sameCounts = (a: BatchCounts, b: BatchCounts) =>
  a.queued === b.queued &&
  a.completed === b.completed &&
  a.failed === b.failed &&
  a.inputTokens === b.inputTokens &&
  a.outputTokens === b.outputTokens &&
  a.answerChars === b.answerChars &&
  a.keptAnswerChars === b.keptAnswerChars;

/**
 * Compares the rebuilt batches, files and their five indexes with the stored ones, both ways. The indexes' entries
 * are functions of the final states, as in the projection (projectBatchChange, projectFileEvent): a batch is among
 * its account's batches once made ([accountId, createdAt, batchId] → ''), among its account's open ones
 * ([accountId, batchId] → '') and by its input file ([inputFileId, batchId] → '') until it ends; a file that exists is
 * among its account's files (→ its purpose), and among those of its purpose ([accountId, purpose, createdAt, fileId]
 * → ''). Accounts' uploads are compared with the log's too.
 */
export const compareBatchFileViews = (
  fold: BatchFileFold,
  stored: StoredBatchFileViews,
  differ: (message: string) => void,
): { readonly batches: number; readonly files: number } => {
  const made = new Map<string, { readonly state: BatchState; readonly counts: BatchCounts }>();
  for (const [batchId, batch] of fold.batches) {
    // Lines of a batch the log never made: the write path keeps no view for it (and the decider queues no such line).
    if (batch.state.status === 'none') differ(`batch ${batchId}: ${batch.counts.queued} lines queued but never made`);
    else made.set(batchId, batch);
  }
  const seenBatches = new Set<string>();
  for (const { id, view } of stored.batches) {
    seenBatches.add(id);
    const rebuilt = made.get(id);
    if (rebuilt === undefined) differ(`batch ${id}: stored but not produced by the log`);
    else {
      if (!isDeepStrictEqual(view.state, rebuilt.state)) differ(`batch ${id}: the stored state differs from the log's`);
      if (!sameCounts(view.counts, rebuilt.counts))
        differ(
          `batch ${id}: the stored counts differ from the log's (stored ${countsText(view.counts)}; the log gives ${countsText(rebuilt.counts)})`,
        );
    }
  }
  for (const id of made.keys()) if (!seenBatches.has(id)) differ(`batch ${id}: produced by the log but not stored`);

  const seenFiles = new Set<string>();
  for (const { id, view } of stored.files) {
    seenFiles.add(id);
    const rebuilt = fold.files.get(id);
    if (rebuilt === undefined)
      differ(
        `file ${id}: ${fold.deletedFiles.has(id) ? 'stored but the log deleted it' : 'stored but not produced by the log'}`,
      );
    else if (!isDeepStrictEqual(view, rebuilt)) differ(`file ${id}: the stored value differs from the log's`);
  }
  for (const id of fold.files.keys()) if (!seenFiles.has(id)) differ(`file ${id}: produced by the log but not stored`);

  const accountBatches = new Map<string, string>();
  const accountOpenBatches = new Map<string, string>();
  const openBatchInputs = new Map<string, string>();
  for (const batch of made.values()) {
    accountBatches.set(keyText(accountBatchKeyOf(batch)), '');
    if (isFinalBatch(batch.state.status)) continue;
    accountOpenBatches.set(keyText(accountOpenBatchKeyOf(batch)), '');
    openBatchInputs.set(keyText(openBatchInputKeyOf(batch)), '');
  }
  const accountFiles = new Map<string, string>();
  const filesByPurpose = new Map<string, string>();
  for (const file of fold.files.values()) {
    accountFiles.set(keyText(accountFileKeyOf(file)), file.purpose);
    filesByPurpose.set(keyText(filePurposeKeyOf(file)), '');
  }
  compareIndex('accountBatches', stored.accountBatches, accountBatches, differ);
  compareIndex('accountOpenBatches', stored.accountOpenBatches, accountOpenBatches, differ);
  compareIndex('openBatchInputs', stored.openBatchInputs, openBatchInputs, differ);
  compareIndex('accountFiles', stored.accountFiles, accountFiles, differ);
  compareIndex('accountFilesByPurpose', stored.accountFilesByPurpose, filesByPurpose, differ);
  compareUploads(stored.uploads, fold.uploads, differ);
  compareAccountCounts(stored.accountCounts, accountCountsOf(made.values(), fold.files.values()), differ);
  return { batches: made.size, files: fold.files.size };
};

/** Accounts' uploads as stored against those the log leaves, both ways. */
export const compareUploads = (
  stored: Iterable<{ readonly id: string; readonly view: AccountUploads }>,
  rebuilt: ReadonlyMap<string, AccountUploads>,
  differ: (message: string) => void,
): void => {
  const seen = new Set<string>();
  for (const { id, view } of stored) {
    seen.add(id);
    const wanted = rebuilt.get(id);
    if (wanted === undefined) differ(`uploads of ${id}: stored but the log leaves none`);
    else if (!isDeepStrictEqual(view, wanted)) differ(`uploads of ${id}: the stored value differs from the log's`);
  }
  for (const id of rebuilt.keys())
    if (!seen.has(id)) differ(`uploads of ${id}: the log leaves some but none are stored`);
};

export const compareIndex = (
  name: string,
  entries: Iterable<{ readonly key: IndexKey; readonly value: string }>,
  rebuilt: ReadonlyMap<string, string>,
  differ: (message: string) => void,
) => {
  const seen = new Set<string>();
  for (const { key, value } of entries) {
    const id = keyText(key);
    seen.add(id);
    const wanted = rebuilt.get(id);
    if (wanted === undefined) differ(`index ${name} ${id}: stored but not produced by the log`);
    else if (wanted !== value) differ(`index ${name} ${id}: the stored value differs from the log's`);
  }
  for (const id of rebuilt.keys()) if (!seen.has(id)) differ(`index ${name} ${id}: produced by the log but not stored`);
};

/** A file's bytes as kept beside the log: their size and SHA-256 (hex). */
export type FileDigest = { readonly bytes: number; readonly sha256: string };

/**
 * The files' bytes against what the log says of them (FileCreated's size and SHA-256): each file that exists must
 * have its bytes kept, exactly those. `digestOf` reads the store's FileBytes (undefined: no bytes kept under that
 * id); it may answer at once or later. To be wired into `replay --verify` once the store keeps files' bytes, with the
 * file views the verification rebuilt (or read: they have been compared with the log by then).
 */
export const verifyFileDigests = async (
  files: Iterable<FileState>,
  digestOf: (fileId: string) => FileDigest | undefined | Promise<FileDigest | undefined>,
): Promise<string[]> => {
  const differences: string[] = [];
  for (const file of files) {
    const digest = await digestOf(file.fileId);
    if (digest === undefined) differences.push(`file ${file.fileId}: the log made it but its bytes are missing`);
    else if (digest.bytes !== file.bytes || digest.sha256 !== file.sha256)
      differences.push(
        `file ${file.fileId}: its bytes differ from the log's (stored ${digest.bytes} bytes, sha256 ${digest.sha256}; the log gives ${file.bytes} bytes, sha256 ${file.sha256})`,
      );
  }
  return differences;
};
