import type { UpstreamState } from './upstreamChoice.js';

/**
 * An upstream's health (contract 19), as the store is to keep it per model and upstream so that no process owns the
 * truth: failures in a row that were the upstream's, until when it is out of service, its current cool-down, and the
 * last error. Pure rules: what a failure or a success does to it, and whether that is a change of state to log once.
 */
export type UpstreamHealth = {
  /** Failures in a row that were the upstream's (connection refused or reset, no answer in time, 5xx, 429). */
  readonly failures: number;
  /** Out of service until then; from then on `trying` until a call succeeds. Absent: in service. */
  readonly outUntil?: number | undefined;
  /** The cool-down it was last taken out for (the next one doubles it while it keeps failing). */
  readonly coolDownMs?: number | undefined;
  readonly lastError?: string | undefined;
};

export const inService: UpstreamHealth = { failures: 0 };

/**
 * Health as a process's book hands it to a claim, a failover or a submit (app/processing/upstreamHealthBook.ts): per
 * model and upstream, only those not in service. Plain JSON (commands may travel to a writer process).
 */
export type HealthView = Readonly<Record<string, Readonly<Record<string, UpstreamHealth>>>>;

/** The first cool-down, and the longest it doubles to. */
export const firstCoolDownMs = 10_000;
export const longestCoolDownMs = 5 * 60_000;
/** A `Retry-After` is honoured up to this long: an upstream cannot take itself out for days by one header. */
export const longestRetryAfterMs = 60 * 60_000;

/** Its state at `now`: out of service during its cool-down, `trying` after it (one call may test it), else in service. */
export const stateAt = (health: UpstreamHealth | undefined, now: number): UpstreamState => {
  if (health?.outUntil === undefined) return 'in_service';
  return now < health.outUntil ? 'out_of_service' : 'trying';
};

/** A change of state, logged once (decided in the store's write: exactly one process logs it). */
export type HealthChange =
  | { readonly kind: 'out'; readonly until: number; readonly reason: string }
  | { readonly kind: 'back' };

export type HealthStep = { readonly health: UpstreamHealth; readonly change?: HealthChange | undefined };

/**
 * A call on the upstream failed in a way that is the upstream's. `threshold` (the model's `upstreamFailures`) failures
 * in a row take it out for a cool-down, 10 s doubling to 5 min while it keeps failing; a `429` with `Retry-After`
 * (`retryAfterMs`) takes it out for that long; a failed trial takes it out again with the doubled cool-down. A failure
 * of a call sent before it went out changes nothing more (it is out already).
 */
export const afterFailure = (
  health: UpstreamHealth | undefined,
  failure: {
    readonly reason: string;
    readonly now: number;
    readonly threshold: number;
    readonly retryAfterMs?: number | undefined;
  },
): HealthStep => {
  const before = health ?? inService;
  const { now, reason } = failure;
  const counted: UpstreamHealth = { ...before, failures: before.failures + 1, lastError: reason };
  const state = stateAt(before, now);
  if (state === 'out_of_service') return { health: counted };
  const out = (coolDownMs: number, until = now + coolDownMs): HealthStep => ({
    health: { ...counted, outUntil: until, coolDownMs },
    change: { kind: 'out', until, reason },
  });
  if (failure.retryAfterMs !== undefined && failure.retryAfterMs > 0)
    return out(before.coolDownMs ?? firstCoolDownMs, now + Math.min(failure.retryAfterMs, longestRetryAfterMs));
  if (state === 'trying') return out(Math.min((before.coolDownMs ?? firstCoolDownMs / 2) * 2, longestCoolDownMs));
  if (counted.failures >= failure.threshold) return out(firstCoolDownMs);
  return { health: counted };
};

/** A call on the upstream succeeded: in service with no failure counted (a change only if it was out or trying). */
export const afterSuccess = (health: UpstreamHealth | undefined): HealthStep => {
  if (health === undefined || (health.failures === 0 && health.outUntil === undefined)) return { health: inService };
  return health.outUntil === undefined ? { health: inService } : { health: inService, change: { kind: 'back' } };
};
