/** How failed attempts are retried: bounded attempts with capped exponential backoff. */
export type RetryPolicy = {
  readonly maxAttempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
};

export const defaultRetryPolicy: RetryPolicy = { maxAttempts: 3, baseDelayMs: 1_000, maxDelayMs: 30_000 };

/** Delay before attempt `attempt + 1`, after attempt number `attempt` (1-based) failed. */
export const backoffDelayMs = (policy: RetryPolicy, attempt: number): number =>
  Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));
