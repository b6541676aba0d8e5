import type { Database, RootDatabase } from 'lmdb';
import { hourlyUsageOf, type UsageRow, usageKeyString } from '../../domain/usage/hourlyUsage.js';
import { addedUsage, readUsageRows, type StoredUsage, usageKeyOf } from '../../storage/hourlyUsage.js';
import type { IndexKey } from '../../storage/projection.js';
import { decodeView } from './codec.js';

/*
 * The hourly usage view in LMDB (`usage.hourly`: [hour, accountId, model] → [input, output, requests]): what a batch
 * adds, written once per row at its end; the range read; and its count from the request records in a data directory
 * written before it existed.
 */

type UsageDatabases = {
  readonly root: RootDatabase;
  readonly meta: Database<number, string>;
  readonly requests: Database<Buffer, Buffer>;
  readonly hourlyUsage: Database<StoredUsage, IndexKey>;
};

/** Rows added in a batch, written once per row when the batch ends. */
export const createHourlyUsageChanges = (dbs: Pick<UsageDatabases, 'hourlyUsage'>) => {
  const added = new Map<string, UsageRow>();
  return {
    add: (row: UsageRow) => {
      const key = usageKeyString(row);
      const before = added.get(key);
      const [inputTokens, outputTokens, requests] = addedUsage(
        before === undefined ? undefined : [before.inputTokens, before.outputTokens, before.requests],
        row,
      );
      added.set(key, { ...row, inputTokens, outputTokens, requests });
    },
    flush() {
      for (const row of added.values()) {
        const key = usageKeyOf(row);
        dbs.hourlyUsage.put(key, addedUsage(dbs.hourlyUsage.get(key), row));
      }
      added.clear();
    },
    clear: () => added.clear(),
  };
};

/** The view's range read (storage/hourlyUsage.ts), as of the current read snapshot. */
export const hourlyUsageRowsOf =
  (dbs: Pick<UsageDatabases, 'hourlyUsage'>) => (range: Parameters<typeof readUsageRows>[0]) =>
    readUsageRows(
      range,
      (start, end) =>
        dbs.hourlyUsage.getRange({ start: start as IndexKey, end: end as IndexKey }) as Iterable<{
          key: (number | string)[];
          value: StoredUsage;
        }>,
    );

/** Set once `usage.hourly` holds the requests completed before it existed. */
export const hourlyUsageCountedKey = 'hourlyUsageCounted';

/**
 * Data directories written before `usage.hourly` existed have completed requests and no rows for them: the first open
 * counts the view whole from the request records (every record is kept, and holds its account, model, completion time
 * and tokens: the projection's own rule, `hourlyUsageOf`), once, with a marker in the same write transaction (as
 * migrations.ts's `countQueuedRequests`). A new directory gets the marker at once.
 */
export const countHourlyUsage = (dbs: UsageDatabases): void => {
  if (dbs.meta.get(hourlyUsageCountedKey) !== undefined) return;
  dbs.root.transactionSync(() => {
    if (dbs.meta.get(hourlyUsageCountedKey) !== undefined) return;
    const rows = new Map<string, { key: IndexKey; usage: StoredUsage }>();
    for (const { value } of dbs.requests.getRange({})) {
      const row = hourlyUsageOf(decodeView(value));
      if (row === undefined) continue;
      const id = usageKeyString(row);
      rows.set(id, { key: usageKeyOf(row), usage: addedUsage(rows.get(id)?.usage, row) });
    }
    for (const { key } of dbs.hourlyUsage.getRange({})) dbs.hourlyUsage.remove(key);
    for (const { key, usage } of rows.values()) dbs.hourlyUsage.put(key, usage);
    dbs.meta.put(hourlyUsageCountedKey, 1);
  });
};
