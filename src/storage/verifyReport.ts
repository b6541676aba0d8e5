/**
 * What `airs replay --verify` finds, on either store: how much of the log it folded, and each difference between the
 * views as stored and as rebuilt from the log. The LMDB verify (adapters/lmdb/verify.ts) and the PostgreSQL one
 * (adapters/postgres/verify.ts) both answer it; the CLI prints it the same way for both.
 */
export type VerifyReport = {
  readonly events: number;
  readonly requests: number;
  readonly accounts: number;
  readonly keys: number;
  /** Each difference between stored and rebuilt, in words. Empty when the views match the log. */
  readonly differences: string[];
};

/** A verification names at most this many differences (a damaged store has one per row; the first few tell). */
export const maxDifferences = 50;
