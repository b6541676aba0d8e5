import { addUsageCounts, type UsageCounts, type UsageRow, usageHourMs } from './hourlyUsage.js';

/*
 * The usage API's page (contract 21), in OpenAI's shape (`/v1/organization/usage/completions`): buckets of the hourly
 * view, one UTC hour or day wide, each with its results grouped by account, model, both or neither. Pure: the app
 * (app/usage.ts) reads the rows and hands them here in the stores' order.
 */

export type BucketWidth = '1h' | '1d';
export type UsageGroupBy = 'account_id' | 'model';

export const bucketWidthMs: { readonly [W in BucketWidth]: number } = { '1h': usageHourMs, '1d': 24 * usageHourMs };

/** Buckets a page holds by default and at most, per width (OpenAI's). */
export const bucketLimits: { readonly [W in BucketWidth]: { readonly default: number; readonly max: number } } = {
  '1h': { default: 24, max: 168 },
  '1d': { default: 7, max: 31 },
};

/** What a usage page is asked for, once checked (times in ms here; the API speaks Unix seconds). */
export type UsageAsk = {
  readonly startMs: number;
  /** Exclusive; absent: no end (the page's `limit` bounds it). */
  readonly endMs?: number | undefined;
  readonly width: BucketWidth;
  readonly groupBy: readonly UsageGroupBy[];
  readonly limit: number;
  /** Where this page starts: a bucket's start from the last page's `next_page`; absent: the first bucket. */
  readonly fromMs?: number | undefined;
  readonly accountIds?: readonly string[] | undefined;
  readonly models?: readonly string[] | undefined;
};

export type UsageResult = {
  readonly object: 'organization.usage.completions.result';
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly num_model_requests: number;
  readonly account_id: string | null;
  readonly model: string | null;
};

export type UsageBucket = {
  readonly object: 'bucket';
  readonly start_time: number;
  readonly end_time: number;
  readonly results: UsageResult[];
};

export type UsagePage = {
  readonly object: 'page';
  readonly data: UsageBucket[];
  readonly has_more: boolean;
  readonly next_page: string | null;
};

/** The start of the UTC-aligned bucket `at` falls in: buckets snap to the UTC grid of their width. */
export const bucketStartOf = (at: number, width: BucketWidth): number =>
  Math.floor(at / bucketWidthMs[width]) * bucketWidthMs[width];

/** The hour the page's read starts at: the bucket the cursor names, else the bucket `startMs` falls in. */
export const firstHourOf = (ask: UsageAsk): number => ask.fromMs ?? bucketStartOf(ask.startMs, ask.width);

const cursorPrefix = 'page_';

/** The opaque cursor of the page that starts with the bucket at `startMs`. */
export const encodeCursor = (startMs: number): string =>
  cursorPrefix + Buffer.from(`usage:${startMs}`, 'utf8').toString('base64url');

/** The bucket start a cursor names, or undefined for one this server did not make. */
export const decodeCursor = (cursor: string): number | undefined => {
  if (!cursor.startsWith(cursorPrefix) || cursor.length > 64) return undefined;
  const text = Buffer.from(cursor.slice(cursorPrefix.length), 'base64url').toString('utf8');
  const match = /^usage:(\d{1,16})$/.exec(text);
  if (match === null) return undefined;
  const at = Number(match[1]);
  return Number.isSafeInteger(at) ? at : undefined;
};

/** Whether a row counts under the ask's filters (`account_ids`, `models`) and before its end. */
export const rowCounts = (ask: UsageAsk, row: UsageRow): boolean =>
  (ask.endMs === undefined || row.hour < ask.endMs) &&
  (ask.accountIds === undefined || ask.accountIds.includes(row.accountId)) &&
  (ask.models === undefined || ask.models.includes(row.model));

/**
 * Gathers a page from rows read in order from `firstHourOf(ask)`: fed row by row, it says when it has seen a row of
 * the bucket after its `limit`th (the page is full: that bucket starts the next page).
 */
export const pageGatherer = (ask: UsageAsk) => {
  const buckets = new Map<number, Map<string, { accountId: string | null; model: string | null } & UsageCounts>>();
  let next: number | undefined;
  const byAccount = ask.groupBy.includes('account_id');
  const byModel = ask.groupBy.includes('model');
  return {
    /** Adds a row; false once the page is full (the row then belongs to the next page). */
    add(row: UsageRow): boolean {
      if (next !== undefined) return false;
      if (!rowCounts(ask, row)) return true;
      const start = bucketStartOf(row.hour, ask.width);
      let results = buckets.get(start);
      if (results === undefined) {
        if (buckets.size >= ask.limit) {
          next = start;
          return false;
        }
        results = new Map();
        buckets.set(start, results);
      }
      const accountId = byAccount ? row.accountId : null;
      const model = byModel ? row.model : null;
      const key = `${accountId ?? ''}\u0000${model ?? ''}`;
      const before = results.get(key) ?? { accountId, model, inputTokens: 0, outputTokens: 0, requests: 0 };
      results.set(key, { ...before, ...addUsageCounts(before, row) });
      return true;
    },
    page(): UsagePage {
      const widthMs = bucketWidthMs[ask.width];
      const data = [...buckets.entries()]
        .sort(([a], [b]) => a - b)
        .map(
          ([start, results]): UsageBucket => ({
            object: 'bucket',
            start_time: start / 1000,
            end_time: (start + widthMs) / 1000,
            results: [...results.entries()]
              .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
              .map(([, r]) => ({
                object: 'organization.usage.completions.result',
                input_tokens: r.inputTokens,
                output_tokens: r.outputTokens,
                num_model_requests: r.requests,
                account_id: r.accountId,
                model: r.model,
              })),
          }),
        );
      return {
        object: 'page',
        data,
        has_more: next !== undefined,
        next_page: next === undefined ? null : encodeCursor(next),
      };
    },
  };
};
