import { StorageFault } from '../../ports/Store.js';

/**
 * Failures of the disk under the data directory (full, read-only, I/O errors), told apart from faults of the code,
 * and lmdb-js's way of reporting them made safe for a process that keeps serving.
 */

/** What LMDB and the OS say when the disk, not the data, is the problem (errno names, their text, LMDB's own codes). */
const diskProblem =
  /ENOSPC|No space left|EIO\b|Input\/output error|EDQUOT|quota|EROFS|Read-only file system|MDB_MAP_FULL|MDB_MAP_RESIZED|MDB_TXN_FULL/i;

type LmdbCommitError = Error & { commitError?: Promise<unknown> };

/**
 * lmdb-js rejects a failed commit with "Commit failed (see commitError for details)" and puts the real cause on a
 * second promise, `commitError`, that nobody else handles. Reads the cause (the promise is already settled by then).
 */
const causeOf = async (error: LmdbCommitError): Promise<string> => {
  if (error.commitError === undefined) return error.message;
  try {
    await error.commitError;
    return error.message;
  } catch (cause) {
    return cause instanceof Error ? cause.message : String(cause);
  }
};

/**
 * The error a failed write ends with: a `StorageFault` naming the disk's problem when it is one (a commit that
 * failed, or LMDB refusing a write for lack of room), the original error otherwise (a bug in deciding a batch).
 */
export const classifyWriteError = async (error: unknown): Promise<unknown> => {
  if (!(error instanceof Error)) return error;
  const committing = (error as LmdbCommitError).commitError !== undefined;
  const cause = await causeOf(error as LmdbCommitError);
  if (committing || diskProblem.test(cause)) return new StorageFault(`writes to the data directory fail: ${cause}`);
  return error;
};

let guarded = false;

/**
 * lmdb-js leaves two promises of a failed commit without a handler (its own batch's commit promise and the
 * `commitError` above; lmdb-js issue 368), and Node ends a process on an unhandled rejection. The store has already
 * answered every caller of the failed batch, so those two say nothing new: they are dropped here. Every other
 * unhandled rejection still ends the process as Node would.
 */
export const guardAgainstLmdbCommitRejections = () => {
  if (guarded) return;
  guarded = true;
  process.on('unhandledRejection', (reason) => {
    if (reason instanceof Error && fromLmdbCommit(reason)) return;
    throw reason;
  });
};

const fromLmdbCommit = (error: LmdbCommitError): boolean =>
  error.commitError !== undefined ||
  (typeof (error as NodeJS.ErrnoException).code === 'number' && /lmdb[\\/]/.test(error.stack ?? ''));
