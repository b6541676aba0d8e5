import { type BatchState, type BatchView, isFinalBatch } from './batch/state.js';
import type { FileState } from './file/state.js';

/**
 * The store counts, per account, what four of a plan's bounds limit, under these counters, in the same write as the
 * events that change them (so each bound is decided inside the write, exact across processes and nodes):
 * - `openBatchesCounter`: the account's batches that have not ended (from `BatchCreated` until it is completed,
 *   failed, expired or cancelled): what `plans.<plan>.maxBatchesInProgress` bounds;
 * - `storedBytesCounter`: what the account makes the store keep, what `plans.<plan>.maxFileStorageBytes` bounds:
 *   the bytes of its files that exist (not deleted), uploads and the output and error files its batches wrote alike
 *   (as OpenAI counts every file of an organisation); and its batches' answers (issue 40): each completed line's
 *   answer while its request keeps it (until it expires), and, while its batch is open, as much again for the line
 *   it will take in the output file (the room the output file is written into, given back in the write that makes
 *   the file and ends the batch). An answer counts its characters (`responseChars`, what the log records of it).
 *   Uploads are refused by it, and a batch's lines are queued only while the account has room for their answers
 *   (`linesWithRoom`, decided in the write: commands.ts); a batch's own output, and the answers of lines already
 *   queued, never are refused;
 * - `storedFilesCounter`: how many of the account's files exist, counted as the bytes are: what `plans.<plan>.maxFiles`
 *   bounds (and so the rows an account's list of files can hold);
 * - `linesAheadCounter`: the account's batch lines queued and not ended yet, whose answers are still to come: what
 *   the room a new line needs is reckoned from.
 *
 * A name starts with what it counts and the unit separator (U+001F), which no account id holds. The PostgreSQL
 * store's migrations 5, 8 and 9 write the same names: change them together.
 */
const separator = '\u001f';

export const openBatchesCounter = (accountId: string): string => `batches${separator}${accountId}`;
export const storedBytesCounter = (accountId: string): string => `fileBytes${separator}${accountId}`;
export const storedFilesCounter = (accountId: string): string => `files${separator}${accountId}`;
export const linesAheadCounter = (accountId: string): string => `linesAhead${separator}${accountId}`;

export type AccountCount = { readonly counter: string; readonly count: number };

/** Whether a batch counts as open: made and not ended. */
export const isOpenBatch = (state: BatchState): boolean => state.status !== 'none' && !isFinalBatch(state.status);

/**
 * What a batch counts in: while open (made and not ended), one open batch, its answers twice (kept, and the room of
 * its output file to come) and its lines not ended; once ended, its answers still kept (nothing before it was made).
 */
export const accountCountsOfBatch = (view: BatchView | undefined): readonly AccountCount[] => {
  if (view === undefined || view.state.status === 'none') return [];
  const { accountId } = view.state.context;
  const { counts } = view;
  const open = isOpenBatch(view.state);
  const answers = counts.keptAnswerChars + (open ? counts.answerChars : 0);
  const ahead = counts.queued - counts.completed - counts.failed;
  const kept: AccountCount[] = open ? [{ counter: openBatchesCounter(accountId), count: 1 }] : [];
  if (answers !== 0) kept.push({ counter: storedBytesCounter(accountId), count: answers });
  if (ahead !== 0) kept.push({ counter: linesAheadCounter(accountId), count: ahead });
  return kept;
};

/**
 * How many more batch lines an account may have queued now, so that the answers still to come fit under its bound of
 * stored bytes: each line queued and not ended holds `answerRoom` (twice the most its answer may take: kept, and its
 * line of the output file), and the lines fit when their room does, beside what the account keeps. So its stored
 * bytes never pass the bound by a batch's answers (an account with less room than one line's has its lines wait).
 */
export const linesWithRoom = (
  account: { readonly kept: number; readonly ahead: number },
  answerRoom: number,
  maxStoredBytes: number,
): number => {
  if (account.kept >= maxStoredBytes) return 0;
  return Math.max(0, Math.floor((maxStoredBytes - account.kept) / Math.max(1, answerRoom)) - account.ahead);
};

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
