import {
  applyTokenUseChange,
  type TokenBucket,
  type TokenBucketKind,
  type TokenUseChange,
} from '../../domain/tokens/tokenUse.js';
import type { LmdbDatabases } from './databases.js';

/** Each account's token buckets in LMDB (`usage.tokens`: accountId → [[kind, start, tokens]…]), one record each. */

/** Adds a write's tokens to an account's buckets and drops those no submit reads any more: one record per account. */
export const writeTokenUse = (dbs: LmdbDatabases, change: TokenUseChange): void => {
  const buckets = applyTokenUseChange(tokenUseOf(dbs, change.accountId), change);
  dbs.tokenUse.put(
    change.accountId,
    buckets.map(({ kind, start, tokens }) => [kind, start, tokens]),
  );
};

/** An account's token buckets, read in one get. */
export const tokenUseOf = (dbs: LmdbDatabases, accountId: string): TokenBucket[] =>
  (dbs.tokenUse.get(accountId) ?? []).map(([kind, start, tokens]) => ({
    kind: kind as TokenBucketKind,
    start,
    tokens,
  }));
