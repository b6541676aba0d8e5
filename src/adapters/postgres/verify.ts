import { type AccountEvent, isAccountEvent } from '../../domain/account/events.js';
import { type BatchEvent, isBatchEvent } from '../../domain/batch/events.js';
import { addCounts, countsDeltaOf } from '../../domain/batch/lines.js';
import {
  type BatchCounts,
  type BatchState,
  type BatchView,
  evolveBatch,
  initialBatchState,
  noCounts,
} from '../../domain/batch/state.js';
import { passwordCredentialKey, sessionCredentialKey } from '../../domain/commands.js';
import type { StoredEvent } from '../../domain/events.js';
import { type FileEvent, isFileEvent, isUploadEvent } from '../../domain/file/events.js';
import { evolveFile, type FileState } from '../../domain/file/state.js';
import { type AccountUploads, evolveUploads } from '../../domain/file/uploads.js';
import { countersOf } from '../../domain/processingCounters.js';
import { countsAsQueued } from '../../domain/queuedCounter.js';
import type { RequestEvent } from '../../domain/request/events.js';
import { holdsText } from '../../domain/request/retention.js';
import { evolveInPlace, initialRequestState, isQueued, type MutableRequestState } from '../../domain/request/state.js';
import { isWebhookEvent } from '../../domain/webhook/events.js';
import { addRebuiltUsage, type StoredUsage, sameUsage } from '../../storage/hourlyUsage.js';
import { projectAccountEvent, usageOf } from '../../storage/projection.js';
import { accountCountsOf, compareAccountCounts, compareUploads } from '../../storage/verifyBatches.js';
import { accountViews, keyText, maxDifferences, type VerifyReport } from '../../storage/verifyReport.js';
import { createWebhookFold, webhookSecretKeysOf } from '../../storage/verifyWebhooks.js';
import { batchColumns, fileColumns, requestColumns } from './batch.js';
import { type Db, type Query, sql } from './db.js';
import { usageRowsAll } from './hourlyUsage.js';
import { webhookDeliveryColumns, webhookEndpointColumns } from './webhookRows.js';

/**
 * `airs replay --verify` on a PostgreSQL store: every view rebuilt from the events table by the server's own fold and
 * projection, and compared with the tables, both ways (a row the log does not make is a difference too).
 *
 * - One snapshot: it all runs in one `REPEATABLE READ READ ONLY` transaction, so nodes may keep writing meanwhile.
 * - Memory does not grow with the requests: their events are read through a server-side cursor ordered by request id
 *   (then `seq`), a page at a time, so each request's events fold one group after another; finished requests are
 *   compared with their rows a page at a time. The events table has no column for the request id (it is inside
 *   `payload`), so PostgreSQL sorts the request events once for the cursor (on disk beyond `work_mem`); no index is
 *   needed for one pass, and none is kept on the hot path of every append for it.
 * - Account, key and session events are few: folded in seq order into maps (`accountViews`, as the LMDB verify does).
 *   So are the counters: queued requests per account, processing per model, usage per account and day; and batches
 *   and files (a few events each), folded by their own steps (`evolveBatch`, `evolveFile`). A batch's lines' counts
 *   are summed, as the writer sums them (storage/writeBatch.ts), from each of its lines' changes of status while the
 *   lines' events are folded (`countsDeltaOf`).
 * - The idempotency index is the one view whose entries depend on the order of several requests' events (the key's
 *   entry names the request queued last with it, until that one expires): it is rebuilt by one query over the events
 *   that returns only the entries that differ.
 *
 * The request indexes of the LMDB store (dispatch, by account, expiry, processing) are PostgreSQL indexes over
 * columns of the request row here; each column is checked against the function of the state the writer sets it from
 * (`requestColumns`), and PostgreSQL keeps its indexes in step with the columns. So are the batch and file indexes (an
 * account's batches, the open ones, an account's files: `batchColumns`, `fileColumns`), and the webhook indexes (an
 * account's endpoints, the due deliveries, an endpoint's delivery log: `webhookEndpointColumns`,
 * `webhookDeliveryColumns`). Webhook endpoints and deliveries are folded in seq order by the projection the writer
 * runs, in maps (storage/verifyWebhooks.ts, as the LMDB verify folds them).
 */
export const verifyPostgres = (db: Db, options: { readonly pageSize?: number } = {}): Promise<VerifyReport> =>
  db.begin(async (query) => {
    await query(sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY`);
    return verifyInSnapshot(query, options.pageSize ?? 1_000);
  });

type RequestRow = {
  req_id: string;
  account_id: string;
  status: string;
  lane: string | null;
  model: string;
  created_at: number | string;
  available_at: number | string;
  expires_at: number | string | null;
  lease_until: number | string | null;
  batch_line: boolean;
  state: unknown;
  text_length: number | null;
};

/** Whether two values are the same as JSON: plain data compared field by field, an absent field and an undefined one
 * alike (the stored view is the JSON of the state the writer folded; key order does not matter). */
export const sameAsJson = (a: unknown, b: unknown): boolean => {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const present = (o: Record<string, unknown>) => Object.keys(o).filter((key) => o[key] !== undefined);
  const keys = present(left);
  return keys.length === present(right).length && keys.every((key) => sameAsJson(left[key], right[key]));
};

/** A bigint column as a number whatever the client's parsing of int8 (the store's: numbers; pg's default: strings). */
const numberOrNull = (value: number | string | null): number | null => (value === null ? null : Number(value));

const show = (value: unknown): string => (value === null ? 'null' : JSON.stringify(value));

export const verifyInSnapshot = async (query: Query, pageSize: number): Promise<VerifyReport> => {
  const differences: string[] = [];
  const differ = (message: string) => {
    if (differences.length < maxDifferences) differences.push(message);
  };
  /** Rows of an open cursor, a page at a time (plain statements, so others may run in between). */
  const pagesOf = async function* <T>(cursor: string, select: string): AsyncGenerator<T[]> {
    await query({ text: `DECLARE ${cursor} NO SCROLL CURSOR FOR ${select}`, values: [] });
    for (;;) {
      const rows = await query<T[]>({ text: `FETCH FORWARD ${pageSize} FROM ${cursor}`, values: [] });
      if (rows.length > 0) yield rows;
      if (rows.length < pageSize) break;
    }
    await query({ text: `CLOSE ${cursor}`, values: [] });
  };

  // The log: gap-free from 1 (seq is its primary key, so count and bounds tell), its head, each payload's own seq.
  const [head] = await query<{ last_seq: number | string; accounts_version: number | string }[]>(sql`
    SELECT last_seq, accounts_version FROM log_head WHERE id = 1`);
  if (head === undefined) differ('log_head: its row is missing');
  const [bounds] = await query<{ n: number; lo: number | null; hi: number | null }[]>(sql`
    SELECT count(*)::float8 AS n, min(seq)::float8 AS lo, max(seq)::float8 AS hi FROM events`);
  const events = bounds?.n ?? 0;
  const lastSeq = bounds?.hi ?? 0;
  if (events > 0 && bounds?.lo !== 1) differ(`log: a gap: expected event 1, found ${bounds?.lo}`);
  else if (events !== lastSeq) {
    const gaps = await query<{ expected: number; found: number }[]>(sql`
      SELECT (e.seq + 1)::float8 AS expected, (SELECT min(f.seq) FROM events f WHERE f.seq > e.seq)::float8 AS found
      FROM events e WHERE e.seq < ${lastSeq} AND NOT EXISTS (SELECT 1 FROM events f WHERE f.seq = e.seq + 1)
      ORDER BY e.seq LIMIT ${maxDifferences}`);
    for (const { expected, found } of gaps) differ(`log: a gap: expected event ${expected}, found ${found}`);
  }
  if (head !== undefined && Number(head.last_seq) !== lastSeq)
    differ(`log_head last_seq: stored ${head.last_seq} but the log ends at ${lastSeq}`);
  const payloadOf = (row: { seq: number | string; payload: StoredEvent }): StoredEvent => {
    if (row.payload?.seq !== Number(row.seq))
      differ(`event ${row.seq}: its payload says seq ${show(row.payload?.seq)}`);
    return row.payload;
  };

  // Accounts, keys, sessions, batches, files and webhooks: their few events, in the order of the log.
  const account = accountViews();
  const webhooks = createWebhookFold();
  const batchStates = new Map<string, BatchState>();
  const files = new Map<string, FileState>();
  const foldBatch = (seq: number | string, event: BatchEvent) => {
    const before = batchStates.get(event.batchId) ?? initialBatchState;
    const after = evolveBatch(before, event);
    // The machine's step makes a new state for every event it accepts; the writer appends no other.
    if (after === before) differ(`event ${seq}: ${event.type} is not accepted by the batch machine`);
    else batchStates.set(event.batchId, after);
  };
  const uploads = new Map<string, AccountUploads>();
  const foldFile = (event: FileEvent) => {
    if (isUploadEvent(event)) {
      const held = evolveUploads(uploads.get(event.accountId), event);
      if (held === undefined) uploads.delete(event.accountId);
      else uploads.set(event.accountId, held);
      return;
    }
    const after = evolveFile(files.get(event.fileId), event);
    if (after === undefined) files.delete(event.fileId);
    else files.set(event.fileId, after);
  };
  for await (const rows of pagesOf<{ seq: number | string; payload: StoredEvent }>(
    'airs_verify_accounts',
    `SELECT seq, payload FROM events WHERE coalesce(payload->>'type', '') NOT LIKE 'Request%' ORDER BY seq`,
  )) {
    for (const row of rows) {
      const event = payloadOf(row);
      try {
        if (isBatchEvent(event)) foldBatch(row.seq, event);
        else if (isFileEvent(event)) foldFile(event);
        else if (isAccountEvent(event)) projectAccountEvent(account.views, event as AccountEvent);
        else if (isWebhookEvent(event)) {
          // The writer appends only what the delivery machine accepts.
          if (!webhooks.event(event)) differ(`event ${row.seq}: ${event.type} is not accepted by the delivery machine`);
        } else differ(`event ${row.seq}: ${show(event?.type)} is of no type the log holds`);
      } catch (error) {
        differ(`event ${row.seq}: ${show(event?.type)} cannot be folded (${(error as Error).message})`);
      }
    }
  }

  // Requests: their events grouped by request, each group folded from nothing by the machine's own step, then
  // compared with the request's row (a page of rows at a time). The counters are summed from the folded states.
  let requests = 0;
  let missing = 0;
  const queuedPerAccount = new Map<string, number>();
  const processingPerCounter = new Map<string, number>();
  const dailyUsage = new Map<string, [number, number]>();
  const hourlyUsage = new Map<string, StoredUsage>();
  const lineCounts = new Map<string, BatchCounts>();
  const add = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  let pending: MutableRequestState[] = [];

  const compareRow = (rebuilt: MutableRequestState, row: RequestRow | undefined) => {
    const { reqId } = rebuilt.context;
    if (row === undefined) {
      differ(`request ${reqId}: produced by the log but not stored`);
      missing++;
      return;
    }
    if (!sameAsJson(row.state, rebuilt)) differ(`request ${reqId}: the stored view differs from the log's`);
    // The columns the request indexes are over (dispatch, by account, expiry, processing).
    const wanted = requestColumns(rebuilt);
    const stored = {
      account_id: row.account_id,
      status: row.status,
      lane: row.lane,
      model: row.model,
      created_at: numberOrNull(row.created_at),
      available_at: numberOrNull(row.available_at),
      expires_at: numberOrNull(row.expires_at),
      lease_until: numberOrNull(row.lease_until),
      batch_line: row.batch_line,
    };
    for (const name of Object.keys(wanted) as (keyof typeof wanted)[]) {
      if (stored[name] !== wanted[name])
        differ(`request ${reqId}: column ${name} stored ${show(stored[name])}, the log gives ${show(wanted[name])}`);
    }
    // Text kept exactly while the status calls for it: a prompt is never empty, a response may be.
    const textLength = row.text_length ?? 0;
    if ((isQueued(rebuilt.status) && textLength === 0) || (!holdsText(rebuilt.status) && textLength > 0))
      differ(`request ${reqId}: ${textLength === 0 ? 'no' : 'a'} text stored while it is ${rebuilt.status}`);
  };

  const flush = async () => {
    if (pending.length === 0) return;
    const ids = pending.map((state) => state.context.reqId);
    const rows = await query<RequestRow[]>(sql`
      SELECT req_id, account_id, status, lane, model, created_at, available_at, expires_at, lease_until, batch_line,
        state, octet_length(text) AS text_length
      FROM requests WHERE req_id = ANY(${ids}::text[])`);
    const byId = new Map(rows.map((row) => [row.req_id, row]));
    for (const rebuilt of pending) compareRow(rebuilt, byId.get(rebuilt.context.reqId));
    pending = [];
  };

  const finish = async (rebuilt: MutableRequestState) => {
    // A request whose first event the machine refused was never made (reported with that event).
    if (rebuilt.status === 'none') return;
    requests++;
    const { accountId } = rebuilt.context;
    if (countsAsQueued(rebuilt)) add(queuedPerAccount, accountId);
    if (rebuilt.status === 'processing')
      for (const counter of countersOf(rebuilt.context)) add(processingPerCounter, counter);
    addRebuiltUsage(hourlyUsage, rebuilt, keyText);
    const used = usageOf(rebuilt);
    if (used !== undefined) {
      const key = keyText([accountId, used.day]);
      const sum = dailyUsage.get(key) ?? [0, 0];
      dailyUsage.set(key, [sum[0] + used.usage.inputTokens, sum[1] + used.usage.outputTokens]);
    }
    pending.push(rebuilt);
    if (pending.length >= pageSize) await flush();
  };

  let working: { reqId: unknown; state: MutableRequestState } | undefined;
  for await (const rows of pagesOf<{ seq: number | string; payload: StoredEvent }>(
    'airs_verify_requests',
    `SELECT seq, payload FROM events WHERE payload->>'type' LIKE 'Request%'
     ORDER BY payload->>'reqId' COLLATE "C", seq`,
  )) {
    for (const row of rows) {
      const event = payloadOf(row) as RequestEvent & { seq: number };
      if (typeof event.reqId !== 'string') {
        differ(`event ${row.seq}: ${event.type} names no request`);
        continue;
      }
      if (working?.reqId !== event.reqId) {
        if (working !== undefined) await finish(working.state);
        working = {
          reqId: event.reqId,
          state: { status: initialRequestState.status, context: { ...initialRequestState.context } },
        };
      }
      let accepted = false;
      const before = { status: working.state.status };
      try {
        accepted = evolveInPlace(working.state, event);
      } catch {
        accepted = false;
      }
      if (!accepted) differ(`event ${row.seq}: ${event.type} is not accepted by the machine`);
      // A line's change of status counts in its batch, event by event as the writer counts it command by command
      // (a command's events in a row add up to the same).
      const { batchId } = working.state.context;
      const delta = accepted && batchId !== undefined ? countsDeltaOf(before, working.state) : undefined;
      if (batchId !== undefined && delta !== undefined)
        lineCounts.set(batchId, addCounts(lineCounts.get(batchId) ?? noCounts, delta));
    }
  }
  if (working !== undefined) await finish(working.state);
  await flush();

  // Rows the log does not make: some, if the counts differ or some the log makes are missing.
  const [storedRequests] = await query<{ n: number }[]>(sql`SELECT count(*)::float8 AS n FROM requests`);
  const storedCount = storedRequests?.n ?? 0;
  if (storedCount !== requests || missing > 0) {
    const unexplained = await query<{ req_id: string }[]>(sql`
      SELECT req_id FROM requests r WHERE NOT EXISTS (
        SELECT 1 FROM events e WHERE e.payload->>'type' = 'RequestQueued' AND e.payload->>'reqId' = r.req_id)
      ORDER BY req_id LIMIT ${maxDifferences}`);
    for (const { req_id } of unexplained) differ(`request ${req_id}: stored but not produced by the log`);
    if (storedCount !== requests) differ(`requests: ${storedCount} rows stored, the log gives ${requests}`);
  }

  // The idempotency index: a key's entry names the request queued last with it (by seq), until that one expires
  // (projection.ts, moveIdempotencyEntry). Only the entries that differ come back.
  const idempotency = await query<
    { account_id: string; key: string; expected: string | null; stored: string | null }[]
  >(sql`
    WITH latest AS (
      SELECT DISTINCT ON (payload->>'accountId', payload->>'idempotencyKey')
        payload->>'accountId' AS account_id, payload->>'idempotencyKey' AS key, payload->>'reqId' AS req_id
      FROM events
      WHERE payload->>'type' = 'RequestQueued' AND payload->>'idempotencyKey' IS NOT NULL
      ORDER BY payload->>'accountId', payload->>'idempotencyKey', seq DESC
    ), expected AS (
      SELECT l.account_id, l.key, l.req_id FROM latest l WHERE NOT EXISTS (
        SELECT 1 FROM events x WHERE x.payload->>'type' = 'RequestExpired' AND x.payload->>'reqId' = l.req_id)
    )
    SELECT coalesce(e.account_id, i.account_id) AS account_id, coalesce(e.key, i.key) AS key,
      e.req_id AS expected, i.req_id AS stored
    FROM expected e FULL JOIN idempotency i
      ON i.account_id = e.account_id COLLATE "C" AND i.key = e.key COLLATE "C"
    WHERE e.req_id IS DISTINCT FROM i.req_id
    ORDER BY 1, 2 LIMIT ${maxDifferences}`);
  for (const { account_id, key, expected, stored } of idempotency) {
    const name = `index idempotency ${keyText([account_id, key])}`;
    if (stored === null) differ(`${name}: produced by the log but not stored`);
    else if (expected === null) differ(`${name}: stored but not produced by the log`);
    else differ(`${name}: the stored value differs from the log's`);
  }

  // Batches (their views, lines' counts included, and the columns their indexes are over) and files: compared row by
  // row, both ways. A batch the machine never made (`none`) has no view, whatever lines name it.
  const rebuiltBatches = new Map<string, BatchView>();
  for (const [batchId, state] of batchStates)
    if (state.status !== 'none') rebuiltBatches.set(batchId, { state, counts: lineCounts.get(batchId) ?? noCounts });
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

  // Accounts, keys, sessions, their indexes and the counters (few): compared entry by entry, both ways.
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
  const { rebuilt } = account;
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

  // A credential for exactly the accounts whose log set a password and the sessions it left open (the hashes
  // themselves are not in the log).
  const wantedCredentials = new Set([
    ...[...rebuilt.accounts.values()]
      .filter((a) => a.passwordSetAt !== undefined)
      .map((a) => passwordCredentialKey(a.accountId)),
    ...[...rebuilt.sessions.keys()].map(sessionCredentialKey),
    // An endpoint's signing secret, and the one its last rotation replaced, until it is removed.
    ...webhookSecretKeysOf(webhooks),
  ]);
  for (const { key } of await query<{ key: string }[]>(sql`SELECT key FROM credentials`))
    if (!wantedCredentials.delete(key)) differ(`credential ${key}: stored but the log sets no such credential`);
  for (const key of wantedCredentials) differ(`credential ${key}: the log sets it but it is missing`);
  // Last uses of keys are operational state (not folded from the log), kept only for keys the log made.
  for (const { key_id } of await query<{ key_id: string }[]>(sql`SELECT key_id FROM key_last_used`))
    if (!rebuilt.keys.has(key_id)) differ(`key use ${key_id}: stored for a key the log never made`);
  if (head !== undefined && Number(head.accounts_version) !== rebuilt.version)
    differ(`log_head accounts_version: stored ${head.accounts_version} but the log gives ${rebuilt.version}`);

  return {
    events,
    requests,
    accounts: rebuilt.accounts.size,
    keys: rebuilt.keys.size,
    webhookEndpoints: webhooks.endpoints.size,
    webhookDeliveries: webhooks.deliveries.size,
    differences,
  };
};
