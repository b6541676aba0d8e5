import { type BatchState, isFinalBatch } from './batch/state.js';
import type { FileState } from './file/state.js';

/**
 * The store counts, per account, what three of a plan's bounds limit, under these counters, in the same write as the
 * events that change them (so each bound is decided inside the write, exact across processes and nodes):
 * - `openBatchesCounter`: the account's batches that have not ended (from `BatchCreated` until it is completed,
 *   failed, expired or cancelled): what `plans.<plan>.maxBatchesInProgress` bounds;
 * - `storedBytesCounter`: the bytes of the account's files that exist (not deleted), uploads and the output and error
 *   files its batches wrote alike (as OpenAI counts every file of an organisation): what
 *   `plans.<plan>.maxFileStorageBytes` bounds. Only uploads are refused by it; a batch's own output never is;
 * - `storedFilesCounter`: how many of the account's files exist, counted as the bytes are: what `plans.<plan>.maxFiles`
 *   bounds (and so the rows an account's list of files can hold).
 *
 * A name starts with what it counts and the unit separator (U+001F), which no account id holds. The PostgreSQL
 * store's migrations 5 and 7 write the same names: change them together.
 */
const separator = '\u001f';

export const openBatchesCounter = (accountId: string): string => `batches${separator}${accountId}`;
export const storedBytesCounter = (accountId: string): string => `fileBytes${separator}${accountId}`;
export const storedFilesCounter = (accountId: string): string => `files${separator}${accountId}`;

export type AccountCount = { readonly counter: string; readonly count: number };

/** Whether a batch counts as open: made and not ended. */
export const isOpenBatch = (state: BatchState): boolean => state.status !== 'none' && !isFinalBatch(state.status);

/** What a batch in `state` counts in (nothing once it has ended, or before it was made). */
export const accountCountsOfBatch = (state: BatchState | undefined): readonly AccountCount[] =>
  state !== undefined && isOpenBatch(state) ? [{ counter: openBatchesCounter(state.context.accountId), count: 1 }] : [];

/** What a file counts in while it exists (`undefined`: deleted, or not made). */
export const accountCountsOfFile = (file: FileState | undefined): readonly AccountCount[] =>
  file === undefined
    ? []
    : [
        { counter: storedBytesCounter(file.accountId), count: file.bytes },
        { counter: storedFilesCounter(file.accountId), count: 1 },
      ];

/** Adds what a change from `before` to `after` does to the counters (nothing where a counter is unchanged). */
export const addCountChange = (
  add: (counter: string, delta: number) => void,
  before: readonly AccountCount[],
  after: readonly AccountCount[],
): void => {
  const deltas = new Map<string, number>();
  for (const { counter, count } of before) deltas.set(counter, (deltas.get(counter) ?? 0) - count);
  for (const { counter, count } of after) deltas.set(counter, (deltas.get(counter) ?? 0) + count);
  for (const [counter, delta] of deltas) if (delta !== 0) add(counter, delta);
};
