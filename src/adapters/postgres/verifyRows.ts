/** Batches, files, webhook endpoints and deliveries: their rebuilt views compared with their rows, both ways. */
import type { BatchView } from '../../domain/batch/state.js';
import type { FileState } from '../../domain/file/state.js';
import type { WebhookFold } from '../../storage/verifyWebhooks.js';
import { sql } from './db.js';
import { batchColumns, fileColumns } from './rowColumns.js';
import type { VerifyCheck } from './verifyCheck.js';
import { numberOrNull, sameAsJson, show } from './verifyValues.js';
import { webhookDeliveryColumns, webhookEndpointColumns } from './webhookRows.js';

/**
 * Batches (their views, lines' counts included, and the columns their indexes are over), files and webhooks: compared
 * row by row, both ways.
 */
export const verifyRows = async (
  { query, differ }: VerifyCheck,
  rebuiltBatches: ReadonlyMap<string, BatchView>,
  files: ReadonlyMap<string, FileState>,
  webhooks: WebhookFold,
) => {
  const compareRows = <V, R extends { id: string; state: unknown }>(
    name: string,
    rows: readonly R[],
    rebuilt: ReadonlyMap<string, V>,
    columnsOf: (view: V) => Record<string, unknown>,
    storedColumns: (row: R) => Record<string, unknown>,
  ) => {
    const seen = new Set<string>();
    for (const row of rows) {
      seen.add(row.id);
      const expected = rebuilt.get(row.id);
      if (expected === undefined) {
        differ(`${name} ${row.id}: stored but not produced by the log`);
        continue;
      }
      if (!sameAsJson(row.state, expected)) differ(`${name} ${row.id}: the stored view differs from the log's`);
      const wanted = columnsOf(expected);
      const stored = storedColumns(row);
      for (const column of Object.keys(wanted))
        if (stored[column] !== wanted[column])
          differ(
            `${name} ${row.id}: column ${column} stored ${show(stored[column])}, the log gives ${show(wanted[column])}`,
          );
    }
    for (const id of rebuilt.keys()) if (!seen.has(id)) differ(`${name} ${id}: produced by the log but not stored`);
  };
  compareRows(
    'batch',
    await query<
      {
        id: string;
        state: unknown;
        account_id: string;
        created_at: number | string;
        open: boolean;
        input_file_id: string;
      }[]
    >(sql`SELECT batch_id AS id, state, account_id, created_at, open, input_file_id FROM batches`),
    rebuiltBatches,
    batchColumns,
    (row) => ({
      account_id: row.account_id,
      created_at: numberOrNull(row.created_at),
      open: row.open,
      input_file_id: row.input_file_id,
    }),
  );
  compareRows(
    'file',
    await query<{ id: string; state: unknown; account_id: string; created_at: number | string; purpose: string }[]>(sql`
      SELECT file_id AS id, state, account_id, created_at, purpose FROM files`),
    files,
    fileColumns,
    (row) => ({ account_id: row.account_id, created_at: numberOrNull(row.created_at), purpose: row.purpose }),
  );

  compareRows(
    'webhook endpoint',
    await query<{ id: string; state: unknown; account_id: string; created_at: number | string; listed: boolean }[]>(sql`
      SELECT endpoint_id AS id, state, account_id, created_at, listed FROM webhook_endpoints`),
    webhooks.endpoints,
    webhookEndpointColumns,
    (row) => ({ account_id: row.account_id, created_at: numberOrNull(row.created_at), listed: row.listed }),
  );
  compareRows(
    'webhook delivery',
    await query<
      { id: string; state: unknown; endpoint_id: string; created_at: number | string; due_at: number | string | null }[]
    >(sql`SELECT delivery_id AS id, state, endpoint_id, created_at, due_at FROM webhook_deliveries`),
    webhooks.deliveries,
    webhookDeliveryColumns,
    (row) => ({
      endpoint_id: row.endpoint_id,
      created_at: numberOrNull(row.created_at),
      due_at: numberOrNull(row.due_at),
    }),
  );
};
