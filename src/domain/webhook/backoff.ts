/**
 * When a failed webhook delivery is tried again: exponential backoff with full jitter (a random delay between a
 * floor and the exponential ceiling, so that a receiver back from an outage is not hit by every waiting delivery at
 * the same moment), the ceiling capped, and every attempt made within a bounded time after the first (72 hours by
 * default): the delay that would pass the bound is cut to end at it, and then no attempt is left. Pure: the random source is given, so a schedule can be replayed and tested.
 */
export type WebhookBackoff = {
  /** The ceiling of the first retry's delay; each later ceiling doubles, up to `maxDelayMs`. */
  readonly baseDelayMs: number;
  /** The largest ceiling. */
  readonly maxDelayMs: number;
  /** No delay is shorter (unless the time left is): a jitter near 0 does not retry at once. */
  readonly minDelayMs: number;
  /** No attempt is made later than this after the first. */
  readonly maxTotalMs: number;
};

export const defaultWebhookBackoff: WebhookBackoff = {
  baseDelayMs: 5_000,
  maxDelayMs: 3_600_000,
  minDelayMs: 1_000,
  maxTotalMs: 72 * 3_600_000,
};

/** A source of numbers in [0, 1), like `Math.random`. */
export type RandomSource = () => number;

/** What is wrong with a backoff policy (from the config file), if anything. */
export const backoffProblem = (policy: WebhookBackoff): string | undefined => {
  const { baseDelayMs, maxDelayMs, minDelayMs, maxTotalMs } = policy;
  const numbers = { baseDelayMs, maxDelayMs, minDelayMs, maxTotalMs };
  for (const [name, value] of Object.entries(numbers))
    if (!Number.isSafeInteger(value) || value < 0) return `${name} must be a whole number of milliseconds, 0 or more`;
  if (minDelayMs > baseDelayMs) return 'minDelayMs must be at most baseDelayMs';
  if (baseDelayMs > maxDelayMs) return 'baseDelayMs must be at most maxDelayMs';
  if (maxTotalMs < minDelayMs) return 'maxTotalMs must be at least minDelayMs';
  return undefined;
};

/** The ceiling of the delay after attempt `attempt` (1-based) failed: base × 2^(attempt − 1), capped. */
export const delayCeilingMs = (policy: WebhookBackoff, attempt: number): number =>
  Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.min(Math.max(0, attempt - 1), 52));

/**
 * How long to wait after attempt `attempt` (1-based) failed, `elapsedMs` after the first attempt began; undefined
 * when no attempt is left (the bound on the total time is reached). The delay is drawn uniformly from
 * [minDelayMs, ceiling], and cut to the time left.
 */
export const nextRetryDelayMs = (
  policy: WebhookBackoff,
  attempt: number,
  elapsedMs: number,
  random: RandomSource,
): number | undefined => {
  const left = policy.maxTotalMs - elapsedMs;
  if (left <= 0) return undefined;
  const ceiling = delayCeilingMs(policy, attempt);
  const drawn = policy.minDelayMs + Math.floor(Math.min(Math.max(random(), 0), 1) * (ceiling - policy.minDelayMs));
  return Math.min(drawn, left);
};

/**
 * The whole schedule for a delivery that never succeeds: the time of each retry after the first attempt, each
 * attempt taking `attemptMs`. What `nextRetryDelayMs` gives, step by step; finite, since every delay but the last is
 * at least `minDelayMs` (or attempts take time). For tests and the operations guide.
 */
export const retrySchedule = (policy: WebhookBackoff, random: RandomSource, attemptMs = 0): number[] => {
  const times: number[] = [];
  let elapsed = attemptMs;
  for (let attempt = 1; ; attempt++) {
    const delay = nextRetryDelayMs(policy, attempt, elapsed, random);
    if (delay === undefined) return times;
    times.push(elapsed + delay);
    elapsed += delay + attemptMs;
    // A policy whose delays and attempts take no time at all would never end: its schedule is cut here.
    if (delay === 0 && attemptMs === 0) return times;
  }
};
