/**
 * How failed webhook attempts are retried (issue 30): exponential backoff with jitter, for as long as the retention
 * lasts (72 hours unless configured). Randomness is not the domain's: the caller draws `random` and passes it in, so
 * deciding stays pure and a test can pin it.
 */
export type WebhookRetryPolicy = {
  /** The delay after the first failed attempt, before jitter; it doubles after each further one. */
  readonly baseDelayMs: number;
  /** The longest delay between two attempts, before jitter. */
  readonly maxDelayMs: number;
  /** How long after it is due (or redelivered) a delivery keeps being attempted before it gives up. */
  readonly retentionMs: number;
};

export const defaultWebhookRetryPolicy: WebhookRetryPolicy = {
  baseDelayMs: 5_000,
  maxDelayMs: 3_600_000,
  retentionMs: 72 * 3_600_000,
};

/**
 * The delay before the attempt after attempt number `attempt` (1-based) failed: the capped exponential delay, of
 * which a random half is taken off ("equal jitter": between half and all of it), so that the deliveries of an
 * endpoint that came back do not all retry in the same second, and no retry comes sooner than half the schedule.
 */
export const webhookRetryDelayMs = (policy: WebhookRetryPolicy, attempt: number, random: number): number => {
  const capped = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.min(52, Math.max(0, attempt - 1)));
  const unit = Math.min(Math.max(random, 0), 1);
  return Math.round(capped / 2 + (capped / 2) * unit);
};
