/**
 * Tokens an account used, kept in a few buckets so that a submit reads them in one look-up (contract 21): the tokens
 * (input and output together) of its requests that ended, counted when each ended, in the same write as its
 * `RequestCompleted`. Three kinds of bucket, each pruned as time moves on so an account never holds more than about
 * 62 of them:
 * - `second`: one per second in which requests ended, for the last 60 s (`tokensPerMinute`);
 * - `day`: the current UTC day (`tokensPerDay`);
 * - `month`: the current calendar month, UTC (`tokensPerMonth`).
 */
export type TokenBucketKind = 'second' | 'day' | 'month';

export type TokenBucket = { readonly kind: TokenBucketKind; readonly start: number; readonly tokens: number };

const secondMs = 1_000;
export const tokenWindowMs = 60_000;
const dayMs = 86_400_000;

export const dayStartAt = (at: number): number => Math.floor(at / dayMs) * dayMs;
export const monthStartAt = (at: number): number => {
  const date = new Date(at);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
};
export const nextMonthStartAt = (at: number): number => {
  const date = new Date(at);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
};

/** The start of the bucket of each kind that a request ending at `at` counts in. */
export const bucketStartAt = (kind: TokenBucketKind, at: number): number =>
  kind === 'second' ? Math.floor(at / secondMs) * secondMs : kind === 'day' ? dayStartAt(at) : monthStartAt(at);

export const tokenBucketKinds: readonly TokenBucketKind[] = ['second', 'day', 'month'];

/**
 * Buckets of a kind that no submit at `at` or later reads any more, and may go: those starting before this time.
 * (A second's bucket counts while its start is within the last 60 s.)
 */
export const staleBefore = (kind: TokenBucketKind, at: number): number =>
  kind === 'second' ? at - tokenWindowMs : bucketStartAt(kind, at);

/** Tokens added to an account's buckets in one write, and what the write then prunes. */
export type TokenUseChange = {
  readonly accountId: string;
  /** Added tokens by bucket. */
  readonly added: readonly TokenBucket[];
  /** The latest end among the requests of this write: buckets stale at that time go (`staleBefore`). */
  readonly latestAt: number;
};

/** Collects the tokens of the requests a write ends, per account (a store buffers them and writes each account once). */
export const createTokenUseChanges = () => {
  const byAccount = new Map<string, { latestAt: number; added: Map<string, TokenBucket> }>();
  return {
    add(accountId: string, at: number, tokens: number) {
      if (tokens <= 0) return;
      let entry = byAccount.get(accountId);
      if (entry === undefined) {
        entry = { latestAt: at, added: new Map() };
        byAccount.set(accountId, entry);
      }
      entry.latestAt = Math.max(entry.latestAt, at);
      for (const kind of tokenBucketKinds) {
        const start = bucketStartAt(kind, at);
        const key = `${kind}:${start}`;
        entry.added.set(key, { kind, start, tokens: (entry.added.get(key)?.tokens ?? 0) + tokens });
      }
    },
    changes(): TokenUseChange[] {
      return [...byAccount].map(([accountId, { latestAt, added }]) => ({
        accountId,
        latestAt,
        added: [...added.values()],
      }));
    },
    get size() {
      return byAccount.size;
    },
    clear: () => byAccount.clear(),
  };
};

/** An account's buckets after a change: added into, then the stale pruned (what the in-memory stores keep). */
export const applyTokenUseChange = (
  buckets: readonly TokenBucket[],
  change: Pick<TokenUseChange, 'added' | 'latestAt'>,
): TokenBucket[] => {
  const merged = new Map<string, TokenBucket>();
  for (const bucket of [...buckets, ...change.added]) {
    const key = `${bucket.kind}:${bucket.start}`;
    merged.set(key, { ...bucket, tokens: (merged.get(key)?.tokens ?? 0) + bucket.tokens });
  }
  return [...merged.values()].filter((bucket) => bucket.start >= staleBefore(bucket.kind, change.latestAt));
};
