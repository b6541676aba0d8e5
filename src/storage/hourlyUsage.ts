import type { RequestState } from '../domain/request/state.js';
import { hourlyUsageAdded, hourlyUsageOf, type UsageKey, type UsageRow } from '../domain/usage/hourlyUsage.js';
import type { UsageRange } from '../ports/Store.js';

/*
 * The hourly usage view as the stores keep it (contract 21's usage API): one row per hour, account and model, keyed
 * [hour, accountId, model] in LMDB and memory (the row in PostgreSQL's `usage_hourly`), holding
 * [inputTokens, outputTokens, requests]. Kept apart from the other projections so that counters added beside it
 * (budgets) merge without touching it.
 */

/** Rows one read returns at most, whatever it asks: a page is read in several reads of this many. */
export const maxUsageRowsPerRead = 1000;

/** What a row holds in LMDB and memory. */
export type StoredUsage = readonly [inputTokens: number, outputTokens: number, requests: number];

export const usageKeyOf = (key: UsageKey): [number, string, string] => [key.hour, key.accountId, key.model];

/** Adds a request's usage to its hour's row when it completes (within this change). */
export const projectHourlyUsage = (
  views: { addHourlyUsage(row: UsageRow): void },
  before: RequestState,
  after: RequestState,
): void => {
  const row = hourlyUsageAdded(before, after);
  if (row !== undefined) views.addHourlyUsage(row);
};

/** A row with what is added to it. */
export const addedUsage = (stored: StoredUsage | undefined, row: UsageRow): StoredUsage => [
  (stored?.[0] ?? 0) + row.inputTokens,
  (stored?.[1] ?? 0) + row.outputTokens,
  (stored?.[2] ?? 0) + row.requests,
];

/**
 * A range read over an ordered store of rows (LMDB's database, memory's sorted map): `scan(start, end)` gives the
 * entries with start <= key < end in key order.
 */
export const readUsageRows = (
  range: UsageRange,
  scan: (
    start: readonly (number | string)[],
    end: readonly (number | string)[],
  ) => Iterable<{
    readonly key: readonly (number | string)[];
    readonly value: StoredUsage;
  }>,
): UsageRow[] => {
  const rows: UsageRow[] = [];
  const limit = Math.min(range.limit, maxUsageRowsPerRead);
  if (!(limit > 0) || !(range.toHour > range.fromHour)) return rows;
  const start =
    range.after !== undefined && range.after.hour >= range.fromHour ? usageKeyOf(range.after) : [range.fromHour];
  for (const { key, value } of scan(start, [range.toHour])) {
    const [hour, accountId, model] = key as [number, string, string];
    if (
      range.after !== undefined &&
      hour === range.after.hour &&
      accountId === range.after.accountId &&
      model === range.after.model
    )
      continue;
    rows.push({ hour, accountId, model, inputTokens: value[0], outputTokens: value[1], requests: value[2] });
    if (rows.length >= limit) break;
  }
  return rows;
};

/** `replay --verify`: adds a request folded from the log to the rows it gives (by `keyText` of the row's key). */
export const addRebuiltUsage = (
  rows: Map<string, StoredUsage>,
  state: RequestState,
  keyText: (key: [number, string, string]) => string,
): void => {
  const row = hourlyUsageOf(state);
  if (row === undefined) return;
  const id = keyText(usageKeyOf(row));
  rows.set(id, addedUsage(rows.get(id), row));
};

export const sameUsage = (a: StoredUsage, b: StoredUsage): boolean => a[0] === b[0] && a[1] === b[1] && a[2] === b[2];
