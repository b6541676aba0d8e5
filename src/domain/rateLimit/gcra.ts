/**
 * The Generic Cell Rate Algorithm: an exact limiter that keeps one number per budget (the theoretical arrival
 * time, TAT) and needs no timer. With `limit` calls per `windowMs`, a caller with nothing spent may use the whole
 * budget at once, then gets one call back every `windowMs / limit`. Over any window of `windowMs` it is never
 * granted more than `limit` plus what refilled during that window.
 */
export type Budget = { readonly limit: number; readonly windowMs: number };

export type Decision = {
  readonly allowed: boolean;
  /** Calls still allowed right now, after this one. */
  readonly remaining: number;
  /** Milliseconds until the budget is whole again. */
  readonly resetMs: number;
  /** When refused: milliseconds until a call would be granted. */
  readonly retryAfterMs: number;
  /** The TAT to keep for next time (unchanged when refused). */
  readonly tat: number;
};

export const decideGcra = (budget: Budget, tat: number | undefined, now: number): Decision => {
  const interval = budget.windowMs / budget.limit;
  const tolerance = budget.windowMs - interval;
  const current = Math.max(tat ?? now, now);
  const earliest = current - tolerance;
  if (earliest > now) {
    return { allowed: false, remaining: 0, resetMs: current - now, retryAfterMs: earliest - now, tat: current };
  }
  const next = current + interval;
  const remaining = Math.floor((now + budget.windowMs - next) / interval + 1e-9);
  return { allowed: true, remaining: Math.max(0, remaining), resetMs: next - now, retryAfterMs: 0, tat: next };
};

/** What is left of a budget right now, without spending any of it (for a dashboard). */
export const peekGcra = (budget: Budget, tat: number | undefined, now: number) => {
  const interval = budget.windowMs / budget.limit;
  const current = Math.max(tat ?? now, now);
  const remaining = Math.floor((now + budget.windowMs - current) / interval + 1e-9);
  return { remaining: Math.min(budget.limit, Math.max(0, remaining)), resetMs: current - now };
};
