/** Accounts, keys, sessions, their indexes, the counters and usage: compared entry by entry with their tables. */
import type { BatchView } from '../../domain/batch/state.js';
import type { FileState } from '../../domain/file/state.js';
import type { AccountUploads } from '../../domain/file/uploads.js';
import { type StoredUsage, sameUsage } from '../../storage/hourlyUsage.js';
import { accountCountsOf, compareAccountCounts, compareUploads } from '../../storage/verifyBatches.js';
import { type AccountViews, keyText } from '../../storage/verifyReport.js';
import { sql } from './db.js';
import { usageRowsAll } from './hourlyUsage.js';
import type { VerifyCheck } from './verifyCheck.js';
import { sameAsJson } from './verifyValues.js';

/** What the log rebuilds of them: account views in maps, the counters summed, and the views the counters follow. */
export type RebuiltEntries = {
  readonly rebuilt: AccountViews;
  readonly queuedPerAccount: ReadonlyMap<string, number>;
  readonly processingPerCounter: ReadonlyMap<string, number>;
  readonly rebuiltBatches: ReadonlyMap<string, BatchView>;
  readonly files: ReadonlyMap<string, FileState>;
  readonly uploads: ReadonlyMap<string, AccountUploads>;
  readonly dailyUsage: ReadonlyMap<string, [number, number]>;
  readonly hourlyUsage: ReadonlyMap<string, StoredUsage>;
};

/** Accounts, keys, sessions, their indexes and the counters (few): compared entry by entry, both ways. */
export const verifyAccounts = async (
  { query, differ }: VerifyCheck,
  {
    rebuilt,
    queuedPerAccount,
    processingPerCounter,
    rebuiltBatches,
    files,
    uploads,
    dailyUsage,
    hourlyUsage,
  }: RebuiltEntries,
) => {
  const compareMap = <V>(
    name: string,
    entries: Iterable<{ key: string; value: V }>,
    rebuilt: ReadonlyMap<string, V>,
    same: (stored: V, rebuilt: V) => boolean,
  ) => {
    const seen = new Set<string>();
    for (const { key, value } of entries) {
      seen.add(key);
      const expected = rebuilt.get(key);
      if (expected === undefined) differ(`${name} ${key}: stored but not produced by the log`);
      else if (!same(value, expected)) differ(`${name} ${key}: the stored value differs from the log's`);
    }
    for (const key of rebuilt.keys()) if (!seen.has(key)) differ(`${name} ${key}: produced by the log but not stored`);
  };
  const accounts = await query<{ account_id: string; state: unknown }[]>(sql`SELECT account_id, state FROM accounts`);
  compareMap<unknown>(
    'account',
    accounts.map((row) => ({ key: row.account_id, value: row.state })),
    rebuilt.accounts,
    sameAsJson,
  );
  const keys = await query<{ key_id: string; account_id: string; state: unknown }[]>(sql`
    SELECT key_id, account_id, state FROM keys`);
  compareMap<unknown>(
    'key',
    keys.map((row) => ({ key: row.key_id, value: row.state })),
    rebuilt.keys,
    sameAsJson,
  );
  // An account's keys: the index is over the key row's account_id.
  compareMap(
    'index accountKeys',
    keys.map((row) => ({ key: keyText([row.account_id, row.key_id]), value: '' })),
    rebuilt.indexes.accountKeys,
    (a, b) => a === b,
  );
  const sessions = await query<{ session_id: string; account_id: string; state: unknown }[]>(sql`
    SELECT session_id, account_id, state FROM sessions`);
  compareMap<unknown>(
    'session',
    sessions.map((row) => ({ key: row.session_id, value: row.state })),
    rebuilt.sessions,
    sameAsJson,
  );
  compareMap(
    'index accountSessions',
    sessions.map((row) => ({ key: keyText([row.account_id, row.session_id]), value: '' })),
    rebuilt.indexes.accountSessions,
    (a, b) => a === b,
  );
  const emails = await query<{ email: string; account_id: string }[]>(sql`SELECT email, account_id FROM emails`);
  compareMap(
    'index emails',
    emails.map((row) => ({ key: row.email, value: row.account_id })),
    rebuilt.indexes.emails,
    (a, b) => a === b,
  );
  const hashes = await query<{ key_hash: string; key_id: string }[]>(sql`SELECT key_hash, key_id FROM key_hashes`);
  compareMap(
    'index keyHashes',
    hashes.map((row) => ({ key: row.key_hash, value: row.key_id })),
    rebuilt.indexes.keyHashes,
    (a, b) => a === b,
  );
  // A count of zero reads as no row (the writer means to drop it; a row left at zero answers the same).
  const queued = await query<{ account_id: string; count: number | string }[]>(sql`
    SELECT account_id, count FROM queued_counts WHERE count <> 0`);
  compareMap(
    'queued count of account',
    queued.map((row) => ({ key: row.account_id, value: Number(row.count) })),
    queuedPerAccount,
    (a, b) => a === b,
  );
  const processing = await query<{ counter: string; count: number | string }[]>(sql`
    SELECT counter, count FROM processing_counts WHERE count <> 0`);
  compareMap(
    'processing count',
    processing.map((row) => ({ key: row.counter, value: Number(row.count) })),
    processingPerCounter,
    (a, b) => a === b,
  );
  const accountCounts = await query<{ counter: string; count: number | string }[]>(sql`
    SELECT counter, count FROM account_counts`);
  compareAccountCounts(
    accountCounts.map((row) => ({ key: row.counter, value: Number(row.count) })),
    accountCountsOf(rebuiltBatches.values(), files.values()),
    differ,
  );
  const storedUploads = await query<{ id: string; view: AccountUploads }[]>(sql`
    SELECT account_id AS id, uploads AS view FROM file_uploads`);
  compareUploads(storedUploads, uploads, differ);
  const usage = await query<
    { account_id: string; day: number | string; input_tokens: number | string; output_tokens: number | string }[]
  >(sql`SELECT account_id, day, input_tokens, output_tokens FROM usage_daily`);
  compareMap<[number, number]>(
    'daily usage',
    usage.map((row) => ({
      key: keyText([row.account_id, Number(row.day)]),
      value: [Number(row.input_tokens), Number(row.output_tokens)],
    })),
    dailyUsage,
    (a, b) => a[0] === b[0] && a[1] === b[1],
  );
  const hourly = await usageRowsAll(query);
  compareMap<StoredUsage>(
    'hourly usage',
    hourly.map((row) => ({
      key: keyText([row.hour, row.accountId, row.model]),
      value: [row.inputTokens, row.outputTokens, row.requests] as const,
    })),
    hourlyUsage,
    sameUsage,
  );
};
