/** Requests rebuilt from their events and compared with their rows, counters summed; and the idempotency index. */
import { addCounts, countsDeltaOf } from '../../domain/batch/lines.js';
import { type BatchCounts, noCounts } from '../../domain/batch/state.js';
import type { StoredEvent } from '../../domain/events.js';
import { countersOf } from '../../domain/processingCounters.js';
import { countsAsQueued } from '../../domain/queuedCounter.js';
import type { RequestEvent } from '../../domain/request/events.js';
import { holdsText } from '../../domain/request/retention.js';
import { evolveInPlace, initialRequestState, isQueued, type MutableRequestState } from '../../domain/request/state.js';
import { addRebuiltUsage, type StoredUsage } from '../../storage/hourlyUsage.js';
import { usageOf } from '../../storage/projection.js';
import { keyText, maxDifferences } from '../../storage/verifyReport.js';
import { sql } from './db.js';
import { requestColumns } from './rowColumns.js';
import type { VerifyCheck } from './verifyCheck.js';
import { numberOrNull, sameAsJson, show } from './verifyValues.js';

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

/**
 * Requests: their events grouped by request, each group folded from nothing by the machine's own step, then
 * compared with the request's row (a page of rows at a time). The counters are summed from the folded states.
 */
export const verifyRequests = async ({ query, pageSize, differ, pagesOf, payloadOf }: VerifyCheck) => {
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
  return { requests, queuedPerAccount, processingPerCounter, dailyUsage, hourlyUsage, lineCounts };
};

/**
 * The idempotency index: a key's entry names the request queued last with it (by seq), until that one expires
 * (projection.ts, moveIdempotencyEntry). Only the entries that differ come back.
 */
export const verifyIdempotency = async ({ query, differ }: VerifyCheck) => {
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
};
