import type { RequestState } from '../request/state.js';

/*
 * The usage view (contract 21, the usage API): per UTC hour, account and model, the tokens completed requests read and
 * wrote and how many completed. Counted when a request completes, in the same store write as its `RequestCompleted`.
 * Only completed requests count: a failed, cancelled or expired one has no usage (decisions.md, issue 42: usage).
 */

export const usageHourMs = 3_600_000;

/** Where a row of the view is kept, in the order every store reads them: hour, then account, then model. */
export type UsageKey = { readonly hour: number; readonly accountId: string; readonly model: string };

/** What a row adds up. */
export type UsageCounts = {
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Completed requests (OpenAI's `num_model_requests`). */
  readonly requests: number;
};

export type UsageRow = UsageKey & UsageCounts;

/** The start (ms, UTC) of the hour `at` falls in. */
export const hourStartOf = (at: number): number => Math.floor(at / usageHourMs) * usageHourMs;

/**
 * The row a request adds to when it completes: its account and model, the hour it completed in, its tokens (none when
 * its model did not say) and itself. Undefined for a request that has not completed.
 */
export const hourlyUsageOf = (state: RequestState): UsageRow | undefined => {
  const { completedAt, accountId, model, inputTokens, outputTokens } = state.context;
  if (completedAt === undefined) return undefined;
  return {
    hour: hourStartOf(completedAt),
    accountId,
    model,
    inputTokens: inputTokens ?? 0,
    outputTokens: outputTokens ?? 0,
    requests: 1,
  };
};

/** What a request's move from `before` to `after` adds to the view: its row once, when it completes. */
export const hourlyUsageAdded = (before: RequestState, after: RequestState): UsageRow | undefined =>
  before.context.completedAt === undefined ? hourlyUsageOf(after) : undefined;

export const addUsageCounts = (a: UsageCounts, b: UsageCounts): UsageCounts => ({
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens,
  requests: a.requests + b.requests,
});

/** A row's key as one string (maps keyed by row). */
export const usageKeyString = (key: UsageKey): string => `${key.hour}\u0000${key.accountId}\u0000${key.model}`;

/** Orders keys as the stores read them. */
export const compareUsageKeys = (a: UsageKey, b: UsageKey): number =>
  a.hour - b.hour ||
  (a.accountId < b.accountId ? -1 : a.accountId > b.accountId ? 1 : 0) ||
  (a.model < b.model ? -1 : a.model > b.model ? 1 : 0);
