/** Writes what a batch gathered (`writeAll`): a bulk statement per table it touched, and the log's head. */
import type { SessionState } from '../../domain/account/state.js';
import type { FileState } from '../../domain/file/state.js';
import type { AccountUploads } from '../../domain/file/uploads.js';
import { holdsText } from '../../domain/request/retention.js';
import { staleBefore, tokenBucketKinds } from '../../domain/tokens/tokenUse.js';
import type { Batch } from '../../ports/Store.js';
import { changesChannel } from './changesChannel.js';
import { type Query, type Statement, sql } from './db.js';
import { hourlyUsageWrite } from './hourlyUsage.js';
import { batchColumns, fileColumns, requestColumns } from './rowColumns.js';
import { webhookDeliveryColumns, webhookEndpointColumns } from './webhookRows.js';
import type { RequestWrite, Writes } from './writes.js';

const statementOf = (text: string, values: unknown[]): Statement => ({ text, values });

const textBytes = (write: RequestWrite): Buffer | null =>
  write.text === undefined || !holdsText(write.state.status) ? null : Buffer.from(write.text, 'utf8');

/** Writes what the batch gathered: a statement per table it touched (bulk, by `unnest` of arrays). */
export const writeAll = async (
  query: Query,
  writes: Writes,
  batch: Batch,
  head: { lastSeq: number },
): Promise<void> => {
  const work: Promise<unknown>[] = [];
  if (writes.events.length > 0) {
    work.push(
      query(sql`
      INSERT INTO events (seq, payload)
      SELECT * FROM unnest(${writes.events.map((event) => event.seq)}::bigint[], ${writes.events.map((event) => JSON.stringify(event))}::text[]::json[])`),
    );
  }
  const requestRows = (rows: [string, RequestWrite][]) => {
    const columns = rows.map(([, write]) => requestColumns(write.state));
    return {
      ids: rows.map(([id]) => id),
      accounts: columns.map((c) => c.account_id),
      statuses: columns.map((c) => c.status),
      lanes: columns.map((c) => c.lane),
      models: columns.map((c) => c.model),
      created: columns.map((c) => c.created_at),
      available: columns.map((c) => c.available_at),
      expires: columns.map((c) => c.expires_at),
      leases: columns.map((c) => c.lease_until),
      lines: columns.map((c) => c.batch_line),
      states: rows.map(([, write]) => JSON.stringify(write.state)),
      texts: rows.map(([, write]) => textBytes(write)),
      holds: rows.map(([, write]) => (holdsText(write.state.status) ? 1 : 0)),
    };
  };
  const created = [...writes.requests].filter(([, write]) => write.isNew);
  const changed = [...writes.requests].filter(([, write]) => !write.isNew);
  if (created.length > 0) {
    const r = requestRows(created);
    work.push(
      query(sql`
      INSERT INTO requests (req_id, account_id, status, lane, model, created_at, available_at, expires_at, lease_until,
        batch_line, state, text)
      SELECT u.req_id, u.account_id, u.status, u.lane, u.model, u.created_at, u.available_at, u.expires_at,
        u.lease_until, u.batch_line, u.state::json, u.text
      FROM unnest(${r.ids}::text[], ${r.accounts}::text[], ${r.statuses}::text[], ${r.lanes}::text[],
        ${r.models}::text[], ${r.created}::bigint[], ${r.available}::bigint[], ${r.expires}::bigint[],
        ${r.leases}::bigint[], ${r.lines}::boolean[], ${r.states}::text[], ${r.texts}::bytea[])
        AS u(req_id, account_id, status, lane, model, created_at, available_at, expires_at, lease_until, batch_line,
          state, text)`),
    );
  }
  if (changed.length > 0) {
    const r = requestRows(changed);
    work.push(
      query(sql`
      UPDATE requests SET account_id = u.account_id, status = u.status, lane = u.lane, model = u.model,
        created_at = u.created_at, available_at = u.available_at, expires_at = u.expires_at,
        lease_until = u.lease_until, state = u.state::json,
        text = CASE WHEN u.holds = 1 THEN COALESCE(u.text, requests.text) END
      FROM unnest(${r.ids}::text[], ${r.accounts}::text[], ${r.statuses}::text[], ${r.lanes}::text[],
        ${r.models}::text[], ${r.created}::bigint[], ${r.available}::bigint[], ${r.expires}::bigint[],
        ${r.leases}::bigint[], ${r.states}::text[], ${r.texts}::bytea[], ${r.holds}::int[])
        AS u(req_id, account_id, status, lane, model, created_at, available_at, expires_at, lease_until, state, text,
          holds)
      WHERE requests.req_id = u.req_id`),
    );
  }
  if (writes.accounts.size > 0) {
    const rows = [...writes.accounts];
    work.push(
      query(sql`
      INSERT INTO accounts (account_id, state)
      SELECT id, state::json FROM unnest(${rows.map(([id]) => id)}::text[], ${rows.map(([, s]) => JSON.stringify(s))}::text[]) AS u(id, state)
      ON CONFLICT (account_id) DO UPDATE SET state = EXCLUDED.state`),
    );
  }
  if (writes.batches.size > 0) {
    const rows = [...writes.batches];
    const columns = rows.map(([, view]) => batchColumns(view));
    work.push(
      query(sql`
      INSERT INTO batches (batch_id, account_id, created_at, open, input_file_id, state)
      SELECT id, account_id, created_at, open, input_file_id, state::json
      FROM unnest(${rows.map(([id]) => id)}::text[], ${columns.map((c) => c.account_id)}::text[],
        ${columns.map((c) => c.created_at)}::bigint[], ${columns.map((c) => c.open)}::boolean[],
        ${columns.map((c) => c.input_file_id)}::text[], ${rows.map(([, view]) => JSON.stringify(view))}::text[])
        AS u(id, account_id, created_at, open, input_file_id, state)
      ON CONFLICT (batch_id) DO UPDATE SET account_id = EXCLUDED.account_id, created_at = EXCLUDED.created_at,
        open = EXCLUDED.open, input_file_id = EXCLUDED.input_file_id, state = EXCLUDED.state`),
    );
  }
  if (writes.files.size > 0) {
    const kept = [...writes.files].filter((entry): entry is [string, FileState] => entry[1] !== undefined);
    const gone = [...writes.files].filter(([, state]) => state === undefined).map(([id]) => id);
    if (kept.length > 0) {
      const columns = kept.map(([, file]) => fileColumns(file));
      work.push(
        query(sql`
        INSERT INTO files (file_id, account_id, created_at, purpose, state)
        SELECT id, account_id, created_at, purpose, state::json
        FROM unnest(${kept.map(([id]) => id)}::text[], ${columns.map((c) => c.account_id)}::text[],
          ${columns.map((c) => c.created_at)}::bigint[], ${columns.map((c) => c.purpose)}::text[],
          ${kept.map(([, file]) => JSON.stringify(file))}::text[])
          AS u(id, account_id, created_at, purpose, state)
        ON CONFLICT (file_id) DO UPDATE SET account_id = EXCLUDED.account_id, created_at = EXCLUDED.created_at,
          purpose = EXCLUDED.purpose, state = EXCLUDED.state`),
      );
    }
    if (gone.length > 0) work.push(query(sql`DELETE FROM files WHERE file_id = ANY(${gone}::text[])`));
  }
  if (writes.uploads.size > 0) {
    const kept = [...writes.uploads].filter((entry): entry is [string, AccountUploads] => entry[1] !== undefined);
    const gone = [...writes.uploads].filter(([, uploads]) => uploads === undefined).map(([id]) => id);
    if (kept.length > 0)
      work.push(
        query(sql`
        INSERT INTO file_uploads (account_id, uploads)
        SELECT id, uploads::json FROM unnest(${kept.map(([id]) => id)}::text[],
          ${kept.map(([, uploads]) => JSON.stringify(uploads))}::text[]) AS u(id, uploads)
        ON CONFLICT (account_id) DO UPDATE SET uploads = EXCLUDED.uploads`),
      );
    if (gone.length > 0) work.push(query(sql`DELETE FROM file_uploads WHERE account_id = ANY(${gone}::text[])`));
  }
  if (writes.webhookEndpoints.size > 0) {
    const rows = [...writes.webhookEndpoints];
    const columns = rows.map(([, state]) => webhookEndpointColumns(state));
    work.push(
      query(sql`
      INSERT INTO webhook_endpoints (endpoint_id, account_id, created_at, listed, state)
      SELECT id, account_id, created_at, listed, state::json
      FROM unnest(${rows.map(([id]) => id)}::text[], ${columns.map((c) => c.account_id)}::text[],
        ${columns.map((c) => c.created_at)}::bigint[], ${columns.map((c) => c.listed)}::boolean[],
        ${rows.map(([, state]) => JSON.stringify(state))}::text[])
        AS u(id, account_id, created_at, listed, state)
      ON CONFLICT (endpoint_id) DO UPDATE SET account_id = EXCLUDED.account_id, created_at = EXCLUDED.created_at,
        listed = EXCLUDED.listed, state = EXCLUDED.state`),
    );
  }
  if (writes.webhookDeliveries.size > 0) {
    const rows = [...writes.webhookDeliveries];
    const columns = rows.map(([, state]) => webhookDeliveryColumns(state));
    work.push(
      query(sql`
      INSERT INTO webhook_deliveries (delivery_id, endpoint_id, created_at, due_at, state)
      SELECT id, endpoint_id, created_at, due_at, state::json
      FROM unnest(${rows.map(([id]) => id)}::text[], ${columns.map((c) => c.endpoint_id)}::text[],
        ${columns.map((c) => c.created_at)}::bigint[], ${columns.map((c) => c.due_at)}::bigint[],
        ${rows.map(([, state]) => JSON.stringify(state))}::text[])
        AS u(id, endpoint_id, created_at, due_at, state)
      ON CONFLICT (delivery_id) DO UPDATE SET endpoint_id = EXCLUDED.endpoint_id, created_at = EXCLUDED.created_at,
        due_at = EXCLUDED.due_at, state = EXCLUDED.state`),
    );
  }
  if (writes.keys.size > 0) {
    const rows = [...writes.keys];
    work.push(
      query(sql`
      INSERT INTO keys (key_id, account_id, state)
      SELECT id, account_id, state::json
      FROM unnest(${rows.map(([id]) => id)}::text[], ${rows.map(([, s]) => s.accountId)}::text[], ${rows.map(([, s]) => JSON.stringify(s))}::text[])
        AS u(id, account_id, state)
      ON CONFLICT (key_id) DO UPDATE SET state = EXCLUDED.state, account_id = EXCLUDED.account_id`),
    );
  }
  if (writes.sessions.size > 0) {
    const kept = [...writes.sessions].filter((entry): entry is [string, SessionState] => entry[1] !== undefined);
    const ended = [...writes.sessions].filter(([, state]) => state === undefined).map(([id]) => id);
    if (kept.length > 0)
      work.push(
        query(sql`
        INSERT INTO sessions (session_id, account_id, state)
        SELECT id, account_id, state::json
        FROM unnest(${kept.map(([id]) => id)}::text[], ${kept.map(([, s]) => s.accountId)}::text[], ${kept.map(([, s]) => JSON.stringify(s))}::text[])
          AS u(id, account_id, state)
        ON CONFLICT (session_id) DO UPDATE SET state = EXCLUDED.state, account_id = EXCLUDED.account_id`),
      );
    if (ended.length > 0) work.push(query(sql`DELETE FROM sessions WHERE session_id = ANY(${ended}::text[])`));
  }
  if (writes.credentials.size > 0) {
    const kept = [...writes.credentials].filter((entry): entry is [string, string] => entry[1] !== undefined);
    const gone = [...writes.credentials].filter(([, value]) => value === undefined).map(([key]) => key);
    if (kept.length > 0)
      work.push(
        query(sql`
        INSERT INTO credentials (key, value)
        SELECT * FROM unnest(${kept.map(([key]) => key)}::text[], ${kept.map(([, value]) => value)}::text[])
        ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`),
      );
    if (gone.length > 0) work.push(query(sql`DELETE FROM credentials WHERE key = ANY(${gone}::text[])`));
  }
  if (writes.emails.size > 0) {
    const rows = [...writes.emails];
    work.push(
      query(sql`
      INSERT INTO emails (email, account_id)
      SELECT * FROM unnest(${rows.map(([email]) => email)}::text[], ${rows.map(([, id]) => id)}::text[])
      ON CONFLICT (email) DO UPDATE SET account_id = EXCLUDED.account_id`),
    );
  }
  if (writes.keyHashes.size > 0) {
    const rows = [...writes.keyHashes];
    work.push(
      query(sql`
      INSERT INTO key_hashes (key_hash, key_id)
      SELECT * FROM unnest(${rows.map(([hash]) => hash)}::text[], ${rows.map(([, id]) => id)}::text[])
      ON CONFLICT (key_hash) DO UPDATE SET key_id = EXCLUDED.key_id`),
    );
  }
  if (writes.idempotency.size > 0) {
    const entries = [...writes.idempotency.values()];
    const kept = entries.filter((entry) => entry.reqId !== undefined);
    const gone = entries.filter((entry) => entry.reqId === undefined);
    if (kept.length > 0)
      work.push(
        query(sql`
        INSERT INTO idempotency (account_id, key, req_id)
        SELECT * FROM unnest(${kept.map((e) => e.accountId)}::text[], ${kept.map((e) => e.key)}::text[], ${kept.map((e) => e.reqId as string)}::text[])
        ON CONFLICT (account_id, key) DO UPDATE SET req_id = EXCLUDED.req_id`),
      );
    if (gone.length > 0)
      work.push(
        query(sql`
        DELETE FROM idempotency i USING unnest(${gone.map((e) => e.accountId)}::text[], ${gone.map((e) => e.key)}::text[]) AS u(account_id, key)
        WHERE i.account_id = u.account_id AND i.key = u.key`),
      );
  }
  const countWrites = (
    table: 'queued_counts' | 'processing_counts' | 'account_counts',
    column: 'account_id' | 'counter',
    deltas: Map<string, number>,
  ) => {
    const rows = [...deltas].filter(([, delta]) => delta !== 0);
    if (rows.length === 0) return;
    const ids = rows.map(([id]) => id);
    // Each delta added, then the counts that came to zero dropped (a statement of its own, sent behind the first: a
    // data-modifying WITH would not see the rows its own statement changed).
    work.push(
      query(
        statementOf(
          `INSERT INTO ${table} (${column}, count) SELECT * FROM unnest($1::text[], $2::bigint[])
           ON CONFLICT (${column}) DO UPDATE SET count = ${table}.count + EXCLUDED.count`,
          [ids, rows.map(([, delta]) => delta)],
        ),
      ),
    );
    work.push(query(statementOf(`DELETE FROM ${table} WHERE ${column} = ANY($1::text[]) AND count = 0`, [ids])));
  };
  countWrites('queued_counts', 'account_id', writes.queuedDeltas);
  countWrites('processing_counts', 'counter', writes.processingDeltas);
  countWrites('account_counts', 'counter', writes.accountDeltas);
  if (writes.usage.size > 0) {
    const rows = [...writes.usage.values()];
    work.push(
      query(sql`
      INSERT INTO usage_daily (account_id, day, input_tokens, output_tokens)
      SELECT * FROM unnest(${rows.map((r) => r.accountId)}::text[], ${rows.map((r) => r.day)}::bigint[], ${rows.map((r) => r.input)}::bigint[], ${rows.map((r) => r.output)}::bigint[])
      ON CONFLICT (account_id, day) DO UPDATE SET input_tokens = usage_daily.input_tokens + EXCLUDED.input_tokens,
        output_tokens = usage_daily.output_tokens + EXCLUDED.output_tokens`),
    );
  }
  if (writes.tokens.size > 0) {
    // Added into each bucket atomically (another node may add to the same one at once), then the stale ones go.
    const changes = writes.tokens.changes();
    const added = changes.flatMap(({ accountId, added }) => added.map((bucket) => ({ accountId, ...bucket })));
    work.push(
      query(sql`
      INSERT INTO token_use (account_id, kind, start, tokens)
      SELECT * FROM unnest(${added.map((r) => r.accountId)}::text[], ${added.map((r) => r.kind)}::text[], ${added.map((r) => r.start)}::bigint[], ${added.map((r) => r.tokens)}::bigint[])
      ON CONFLICT (account_id, kind, start) DO UPDATE SET tokens = token_use.tokens + EXCLUDED.tokens`),
    );
    const stale = changes.flatMap(({ accountId, latestAt }) =>
      tokenBucketKinds.map((kind) => ({ accountId, kind, before: staleBefore(kind, latestAt) })),
    );
    work.push(
      query(sql`
      DELETE FROM token_use t USING unnest(${stale.map((r) => r.accountId)}::text[], ${stale.map((r) => r.kind)}::text[], ${stale.map((r) => r.before)}::bigint[]) AS s(account_id, kind, before)
      WHERE t.account_id = s.account_id AND t.kind = s.kind AND t.start < s.before`),
    );
  }
  const hourly = hourlyUsageWrite([...writes.hourlyUsage.values()]);
  if (hourly !== undefined) work.push(query(hourly));
  const keyUses = new Map((batch.keyUses ?? []).map(({ keyId, at }) => [keyId, at]));
  if (keyUses.size > 0) {
    work.push(
      query(sql`
      INSERT INTO key_last_used (key_id, at) SELECT * FROM unnest(${[...keyUses.keys()]}::text[], ${[...keyUses.values()]}::bigint[])
      ON CONFLICT (key_id) DO UPDATE SET at = EXCLUDED.at`),
    );
  }
  const lastSeq = writes.lastSeq ?? head.lastSeq;
  if (lastSeq !== head.lastSeq || writes.accountsVersionBumps > 0) {
    work.push(
      query(sql`
      UPDATE log_head SET last_seq = ${lastSeq}, accounts_version = accounts_version + ${writes.accountsVersionBumps}
      WHERE id = 1`),
    );
  }
  // Delivered to every listening node when (and only if) this transaction commits.
  if (writes.events.length > 0) work.push(query(sql`SELECT pg_notify(${changesChannel}, ${String(lastSeq)})`));
  await Promise.all(work);
};
