import {
  bucketStartAt,
  dayStartAt,
  nextMonthStartAt,
  type TokenBucket,
  type TokenBucketKind,
  tokenWindowMs,
} from './tokenUse.js';

/** An account's token limits (contract 21); `null`: none. */
export type TokenLimits = {
  readonly tokensPerMinute: number | null;
  readonly tokensPerDay: number | null;
  readonly tokensPerMonth: number | null;
};

export const hasTokenLimits = (limits: TokenLimits): boolean =>
  limits.tokensPerMinute !== null || limits.tokensPerDay !== null || limits.tokensPerMonth !== null;

/**
 * Why a submit is refused: the tokens of the last 60 s at `tokensPerMinute` (a rate: retry once enough of the window
 * has passed), or a day's or month's budget used (a quota: it comes back when the budget resets).
 */
export type TokenRefusal =
  | { readonly kind: 'rate'; readonly used: number; readonly limit: number; readonly retryAfterMs: number }
  | {
      readonly kind: 'quota';
      readonly budget: 'tokensPerDay' | 'tokensPerMonth';
      readonly used: number;
      readonly limit: number;
      readonly resetsAt: number;
    };

const usedIn = (buckets: readonly TokenBucket[], kind: TokenBucketKind, now: number): number => {
  const start = bucketStartAt(kind, now);
  let used = 0;
  for (const bucket of buckets) if (bucket.kind === kind && bucket.start === start) used += bucket.tokens;
  return used;
};

/** What the account has used of each token limit at `now` (the dashboard shows it beside the limits). */
export type TokensUsed = {
  readonly tokensPerMinute: number;
  readonly tokensPerDay: number;
  readonly tokensPerMonth: number;
};

export const tokensUsed = (buckets: readonly TokenBucket[], now: number): TokensUsed => ({
  tokensPerMinute: buckets
    .filter((bucket) => bucket.kind === 'second' && bucket.start > now - tokenWindowMs && bucket.start <= now)
    .reduce((sum, bucket) => sum + bucket.tokens, 0),
  tokensPerDay: usedIn(buckets, 'day', now),
  tokensPerMonth: usedIn(buckets, 'month', now),
});

/**
 * Whether the account may submit at `now`, by its buckets (tokenUse.ts): a budget used (at or over its limit) refuses,
 * the month's and the day's first (they last longest), then the minute's. Tokens count when a request ends, so work
 * accepted before a budget was reached may take it past its limit; nothing new is accepted after.
 */
export const tokenRefusal = (
  limits: TokenLimits,
  buckets: readonly TokenBucket[],
  now: number,
): TokenRefusal | undefined => {
  if (limits.tokensPerMonth !== null) {
    const used = usedIn(buckets, 'month', now);
    if (used >= limits.tokensPerMonth)
      return {
        kind: 'quota',
        budget: 'tokensPerMonth',
        used,
        limit: limits.tokensPerMonth,
        resetsAt: nextMonthStartAt(now),
      };
  }
  if (limits.tokensPerDay !== null) {
    const used = usedIn(buckets, 'day', now);
    if (used >= limits.tokensPerDay)
      return {
        kind: 'quota',
        budget: 'tokensPerDay',
        used,
        limit: limits.tokensPerDay,
        resetsAt: dayStartAt(now) + 86_400_000,
      };
  }
  if (limits.tokensPerMinute !== null) return minuteRefusal(limits.tokensPerMinute, buckets, now);
  return undefined;
};

/** The last 60 s: refused while their tokens are at the limit; retry when the oldest seconds leaving the window take
 * enough with them to be under it. */
const minuteRefusal = (limit: number, buckets: readonly TokenBucket[], now: number): TokenRefusal | undefined => {
  const inWindow = buckets
    .filter((bucket) => bucket.kind === 'second' && bucket.start > now - tokenWindowMs && bucket.start <= now)
    .sort((a, b) => a.start - b.start);
  const used = inWindow.reduce((sum, bucket) => sum + bucket.tokens, 0);
  if (used < limit) return undefined;
  let left = used;
  for (const bucket of inWindow) {
    left -= bucket.tokens;
    // The bucket counts while its start is within the last 60 s.
    if (left < limit) return { kind: 'rate', used, limit, retryAfterMs: bucket.start + tokenWindowMs - now };
  }
  return { kind: 'rate', used, limit, retryAfterMs: tokenWindowMs };
};

/** The words of a refusal, naming the budget and, for a quota, when it resets (ISO time). */
export const tokenRefusalMessage = (refusal: TokenRefusal, retryAfterSeconds: number): string =>
  refusal.kind === 'rate'
    ? `this account's requests used ${refusal.used} tokens in the last 60 s; its limit is ${refusal.limit} (tokensPerMinute); retry after ${retryAfterSeconds} s`
    : `this account has used ${refusal.used} tokens of its ${refusal.budget === 'tokensPerDay' ? 'daily' : 'monthly'} budget of ${refusal.limit} (${refusal.budget}); it resets at ${new Date(refusal.resetsAt).toISOString()}`;
