import type { UsageRow } from '../../domain/usage/hourlyUsage.js';
import type { UsageRange } from '../../ports/Store.js';
import { maxUsageRowsPerRead } from '../../storage/hourlyUsage.js';
import { type Query, type Statement, sql } from './db.js';

/*
 * The hourly usage view in PostgreSQL (`usage_hourly`, one row per hour, account and model): its migration, the
 * batch's write (added to the rows in the batch's own transaction) and the range read.
 */

/**
 * The migration that makes the table, counted whole from the request rows (every request row is kept and holds its
 * account, model, completion time and tokens: the projection's own rule, domain/usage/hourlyUsage.ts), so a database
 * written before it has the usage of every request completed before. Counted again whole if it runs on a database
 * that has the table (a schema version set back by hand): it never counts a request twice.
 */
export const hourlyUsageMigration = `
  CREATE TABLE IF NOT EXISTS usage_hourly (
    hour bigint NOT NULL,
    account_id text COLLATE "C" NOT NULL,
    model text COLLATE "C" NOT NULL,
    input_tokens bigint NOT NULL,
    output_tokens bigint NOT NULL,
    requests bigint NOT NULL,
    PRIMARY KEY (hour, account_id, model)
  );
  DELETE FROM usage_hourly;
  INSERT INTO usage_hourly (hour, account_id, model, input_tokens, output_tokens, requests)
    SELECT (floor((state->'context'->>'completedAt')::numeric / 3600000) * 3600000)::bigint,
      state->'context'->>'accountId', state->'context'->>'model',
      sum(coalesce((state->'context'->>'inputTokens')::bigint, 0)),
      sum(coalesce((state->'context'->>'outputTokens')::bigint, 0)),
      count(*)
    FROM requests WHERE state->'context'->>'completedAt' IS NOT NULL
    GROUP BY 1, 2, 3;
  `;

/** The statement that adds a batch's rows (none when it completed nothing). */
export const hourlyUsageWrite = (rows: readonly UsageRow[]): Statement | undefined =>
  rows.length === 0
    ? undefined
    : sql`
      INSERT INTO usage_hourly (hour, account_id, model, input_tokens, output_tokens, requests)
      SELECT * FROM unnest(${rows.map((r) => r.hour)}::bigint[], ${rows.map((r) => r.accountId)}::text[],
        ${rows.map((r) => r.model)}::text[], ${rows.map((r) => r.inputTokens)}::bigint[],
        ${rows.map((r) => r.outputTokens)}::bigint[], ${rows.map((r) => r.requests)}::bigint[])
      ON CONFLICT (hour, account_id, model) DO UPDATE SET
        input_tokens = usage_hourly.input_tokens + EXCLUDED.input_tokens,
        output_tokens = usage_hourly.output_tokens + EXCLUDED.output_tokens,
        requests = usage_hourly.requests + EXCLUDED.requests`;

type Row = {
  hour: number | string;
  account_id: string;
  model: string;
  input_tokens: number | string;
  output_tokens: number | string;
  requests: number | string;
};

const rowOf = (row: Row): UsageRow => ({
  hour: Number(row.hour),
  accountId: row.account_id,
  model: row.model,
  inputTokens: Number(row.input_tokens),
  outputTokens: Number(row.output_tokens),
  requests: Number(row.requests),
});

/** The range read (ports/Store.ts `UsageRange`). */
export const usageRowsOf =
  (query: Query) =>
  async (range: UsageRange): Promise<UsageRow[]> => {
    const limit = Math.min(range.limit, maxUsageRowsPerRead);
    if (!(limit > 0) || !(range.toHour > range.fromHour)) return [];
    const { after } = range;
    const rows = await query<Row[]>(
      after === undefined
        ? sql`
          SELECT * FROM usage_hourly WHERE hour >= ${range.fromHour} AND hour < ${range.toHour}
          ORDER BY hour, account_id, model LIMIT ${limit}`
        : sql`
          SELECT * FROM usage_hourly WHERE hour >= ${range.fromHour} AND hour < ${range.toHour}
            AND (hour, account_id, model) > (${after.hour}::bigint, ${after.accountId}::text COLLATE "C",
              ${after.model}::text COLLATE "C")
          ORDER BY hour, account_id, model LIMIT ${limit}`,
    );
    return rows.map(rowOf);
  };

/** Every row (`replay --verify`, inside its one snapshot). */
export const usageRowsAll = async (query: Query): Promise<UsageRow[]> =>
  (await query<Row[]>(sql`SELECT * FROM usage_hourly`)).map(rowOf);
