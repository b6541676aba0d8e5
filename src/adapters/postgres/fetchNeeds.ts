/** Fetches what a batch's deciding needs (`fetchInto`) into its `Fetched`: one statement per kind of thing. */
import type { AccountState, KeyState, SessionState } from '../../domain/account/state.js';
import type { BatchView } from '../../domain/batch/state.js';
import type { FileState } from '../../domain/file/state.js';
import type { AccountUploads } from '../../domain/file/uploads.js';
import type { RequestState } from '../../domain/request/state.js';
import type { DeliveryState } from '../../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../../domain/webhook/endpoint.js';
import { type Query, sql } from './db.js';
import { type Fetched, pairKey } from './fetched.js';
import { fetchOutbox } from './fetchOutbox.js';
import { type Need, ofKind, unique } from './need.js';

/** A request's row with its batch's view, if it is a batch's line (null: not a line, or no such batch). */
type LineRow = { id: string; state: RequestState; batch_id: string | null; batch: BatchView | null };

/** Keeps the batch views that came with requests' rows (a batch fetched already is the same: one transaction). */
const addBatchesOf = (fetched: Fetched, rows: readonly LineRow[]) => {
  for (const { batch_id, batch } of rows)
    if (batch_id !== null && !fetched.batches.has(batch_id)) fetched.batches.set(batch_id, batch);
};

/**
 * Fetches what `needs` names into `fetched`, one statement per kind of thing, all handed to the transaction's
 * connection at once (it runs them in order, one round trip each).
 */
export const fetchInto = async (query: Query, fetched: Fetched, needs: readonly Need[]): Promise<void> => {
  const work: Promise<void>[] = [];
  const byIds = <V>(
    kind: 'account' | 'key' | 'session' | 'email' | 'credential' | 'batch' | 'file' | 'uploads' | 'webhookEndpoint',
    map: Map<string, V | null>,
    query: (ids: string[]) => Promise<readonly { id: string; value: V }[]>,
  ) => {
    const ids = unique(ofKind(needs, kind).map((need) => need.id)).filter((id) => !map.has(id));
    if (ids.length === 0) return;
    work.push(
      query(ids).then((rows) => {
        for (const id of ids) map.set(id, null);
        for (const { id, value } of rows) map.set(id, value);
      }),
    );
  };
  // Requests, each with its batch's view when it is a line (the join costs nothing for a request that is not): a
  // line's success or failure changes its batch's counts, and the hot path of a big batch takes one round trip.
  const requestIds = unique(ofKind(needs, 'request').map((need) => need.id)).filter((id) => !fetched.requests.has(id));
  if (requestIds.length > 0) {
    work.push(
      query<LineRow[]>(sql`
        SELECT r.req_id AS id, r.state, b.batch_id, b.state AS batch
        FROM requests r LEFT JOIN batches b ON b.batch_id = (r.state->'context'->>'batchId') COLLATE "C"
        WHERE r.req_id = ANY(${requestIds}::text[])`).then((rows) => {
        for (const id of requestIds) fetched.requests.set(id, null);
        for (const row of rows) fetched.requests.set(row.id, row.state);
        addBatchesOf(fetched, rows);
      }),
    );
  }
  byIds<BatchView>('batch', fetched.batches, (ids) =>
    query(sql`SELECT batch_id AS id, state AS value FROM batches WHERE batch_id = ANY(${ids}::text[])`),
  );
  byIds<FileState>('file', fetched.files, (ids) =>
    query(sql`SELECT file_id AS id, state AS value FROM files WHERE file_id = ANY(${ids}::text[])`),
  );
  byIds<AccountUploads>('uploads', fetched.uploads, (ids) =>
    query(sql`SELECT account_id AS id, uploads AS value FROM file_uploads WHERE account_id = ANY(${ids}::text[])`),
  );
  byIds<WebhookEndpointState>('webhookEndpoint', fetched.webhookEndpoints, (ids) =>
    query(sql`SELECT endpoint_id AS id, state AS value FROM webhook_endpoints WHERE endpoint_id = ANY(${ids}::text[])`),
  );
  const deliveryIds = unique(ofKind(needs, 'webhookDelivery').map((need) => need.id)).filter(
    (id) => !fetched.webhookDeliveries.has(id),
  );
  if (deliveryIds.length > 0) {
    // Each with its endpoint: a delivery command reads both.
    work.push(
      query<{ id: string; state: DeliveryState; endpoint_id: string; endpoint: WebhookEndpointState | null }[]>(sql`
        SELECT d.delivery_id AS id, d.state, d.endpoint_id, e.state AS endpoint
        FROM webhook_deliveries d LEFT JOIN webhook_endpoints e ON e.endpoint_id = d.endpoint_id
        WHERE d.delivery_id = ANY(${deliveryIds}::text[])`).then((rows) => {
        for (const id of deliveryIds) fetched.webhookDeliveries.set(id, null);
        for (const row of rows) {
          fetched.webhookDeliveries.set(row.id, row.state);
          if (!fetched.webhookEndpoints.has(row.endpoint_id))
            fetched.webhookEndpoints.set(row.endpoint_id, row.endpoint);
        }
      }),
    );
  }
  fetchOutbox(query, fetched, needs, work);
  byIds<AccountState>('account', fetched.accounts, (ids) =>
    query(sql`SELECT account_id AS id, state AS value FROM accounts WHERE account_id = ANY(${ids}::text[])`),
  );
  byIds<KeyState>('key', fetched.keys, (ids) =>
    query(sql`SELECT key_id AS id, state AS value FROM keys WHERE key_id = ANY(${ids}::text[])`),
  );
  byIds<SessionState>('session', fetched.sessions, (ids) =>
    query(sql`SELECT session_id AS id, state AS value FROM sessions WHERE session_id = ANY(${ids}::text[])`),
  );
  byIds<string>('email', fetched.emails, (ids) =>
    query(sql`SELECT email AS id, account_id AS value FROM emails WHERE email = ANY(${ids}::text[])`),
  );
  byIds<string>('credential', fetched.credentials, (ids) =>
    query(sql`SELECT key AS id, value FROM credentials WHERE key = ANY(${ids}::text[])`),
  );

  const idempotency = ofKind(needs, 'idempotency').filter(
    (need) => !fetched.idempotency.has(pairKey(need.accountId, need.key)),
  );
  if (idempotency.length > 0) {
    // With the state of the request each entry names (a repeat is answered from it).
    work.push(
      query<{ account_id: string; key: string; req_id: string; state: RequestState | null }[]>(sql`
        SELECT i.account_id, i.key, i.req_id, r.state
        FROM idempotency i JOIN unnest(${idempotency.map((n) => n.accountId)}::text[], ${idempotency.map((n) => n.key)}::text[]) AS u(account_id, key)
          ON i.account_id = u.account_id AND i.key = u.key
        LEFT JOIN requests r ON r.req_id = i.req_id`).then((rows) => {
        for (const need of idempotency) fetched.idempotency.set(pairKey(need.accountId, need.key), null);
        for (const row of rows) {
          fetched.idempotency.set(pairKey(row.account_id, row.key), row.req_id);
          if (!fetched.requests.has(row.req_id)) fetched.requests.set(row.req_id, row.state);
        }
      }),
    );
  }

  const sessionsOf = unique(ofKind(needs, 'sessionsOf').map((need) => need.id)).filter(
    (id) => !fetched.sessionsOf.has(id),
  );
  if (sessionsOf.length > 0) {
    work.push(
      query<{ account_id: string; session_id: string; state: SessionState }[]>(sql`
        SELECT account_id, session_id, state FROM sessions WHERE account_id = ANY(${sessionsOf}::text[])
        ORDER BY account_id, session_id`).then((rows) => {
        const found = new Map<string, string[]>(sessionsOf.map((id) => [id, []]));
        for (const row of rows) {
          found.get(row.account_id)?.push(row.session_id);
          if (!fetched.sessions.has(row.session_id)) fetched.sessions.set(row.session_id, row.state);
        }
        for (const [id, sessions] of found) fetched.sessionsOf.set(id, sessions);
      }),
    );
  }

  const counts = (
    kind: 'queuedCount' | 'processingCount' | 'accountCount',
    map: Map<string, number>,
    query: (ids: string[]) => Promise<readonly { id: string; count: number }[]>,
  ) => {
    const ids = unique(ofKind(needs, kind).map((need) => need.id)).filter((id) => !map.has(id));
    if (ids.length === 0) return;
    work.push(
      query(ids).then((rows) => {
        for (const id of ids) map.set(id, 0);
        for (const { id, count } of rows) map.set(id, count);
      }),
    );
  };
  counts('queuedCount', fetched.queuedCounts, (ids) =>
    query(sql`SELECT account_id AS id, count FROM queued_counts WHERE account_id = ANY(${ids}::text[])`),
  );
  counts('processingCount', fetched.processingCounts, (ids) =>
    query(sql`SELECT counter AS id, count FROM processing_counts WHERE counter = ANY(${ids}::text[])`),
  );
  counts('accountCount', fetched.accountCounts, (ids) =>
    query(sql`SELECT counter AS id, count FROM account_counts WHERE counter = ANY(${ids}::text[])`),
  );

  if (!fetched.allProcessingCounts && ofKind(needs, 'processingCounts').length > 0) {
    work.push(
      query<{ counter: string; count: number }[]>(sql`SELECT counter, count FROM processing_counts`).then((rows) => {
        for (const { counter, count } of rows) fetched.processingCounts.set(counter, count);
        fetched.allProcessingCounts = true;
      }),
    );
  }

  if (fetched.anyWaiting === undefined && ofKind(needs, 'anyWaiting').length > 0) {
    work.push(
      query<{ any: boolean }[]>(sql`SELECT EXISTS (SELECT 1 FROM requests WHERE status = 'waiting') AS any`).then(
        ([row]) => {
          fetched.anyWaiting = row?.any === true;
        },
      ),
    );
  }

  for (const { now, limit } of ofKind(needs, 'lapsed')) {
    const key = `${now}:${limit}`;
    if (fetched.lapsed.has(key)) continue;
    fetched.lapsed.set(key, []);
    // With the batch views of lines among them: a line whose lease lapsed with no attempt left fails (its batch counts
    // it).
    work.push(
      query<LineRow[]>(sql`
        SELECT r.req_id AS id, r.state, b.batch_id, b.state AS batch
        FROM (SELECT req_id, lease_until, state FROM requests WHERE lease_until <= ${now}
          ORDER BY lease_until, req_id LIMIT ${Math.max(0, limit)}) r
        LEFT JOIN batches b ON b.batch_id = (r.state->'context'->>'batchId') COLLATE "C"
        ORDER BY r.lease_until, r.req_id`).then((rows) => {
        fetched.lapsed.set(
          key,
          rows.map((row) => row.id),
        );
        for (const row of rows) if (!fetched.requests.has(row.id)) fetched.requests.set(row.id, row.state);
        addBatchesOf(fetched, rows);
      }),
    );
  }

  for (const { after, limit, entries } of ofKind(needs, 'accountsAfter')) {
    // A loose index scan (one hop of the dispatch index per lane, whatever each lane has waiting), and each lane's
    // first waiting requests, with their account's view (a claim reads its plan: the bound of its requests being
    // processed). A lane has a waiting request (this statement's snapshot found it), so its first row names its
    // account.
    work.push(
      query<(QueueRow & { account_id: string | null; account_state: AccountState | null })[]>(sql`
        WITH RECURSIVE waiting(lane) AS (
          (SELECT lane FROM requests WHERE status = 'waiting' AND lane > ${after} ORDER BY lane LIMIT 1)
          UNION ALL
          SELECT (SELECT r.lane FROM requests r WHERE r.status = 'waiting' AND r.lane > w.lane
            ORDER BY r.lane LIMIT 1)
          FROM waiting w WHERE w.lane IS NOT NULL
        ), waiting_lanes AS (
          SELECT lane FROM waiting WHERE lane IS NOT NULL LIMIT ${limit}
        )
        SELECT l.lane, q.account_id, ac.state AS account_state, q.req_id, q.available_at, q.model, q.state
        FROM waiting_lanes l LEFT JOIN LATERAL (
          SELECT account_id, req_id, available_at, model, state FROM requests
          WHERE status = 'waiting' AND lane = l.lane
          ORDER BY available_at, req_id LIMIT ${entries}
        ) q ON true LEFT JOIN accounts ac ON ac.account_id = q.account_id
        ORDER BY l.lane, q.available_at, q.req_id`).then((rows) => {
        const lanes = [...new Set(rows.map((row) => row.lane))];
        fetched.addAccounts(after, lanes, lanes.length < limit);
        for (const row of rows)
          if (row.account_id !== null && !fetched.accounts.has(row.account_id))
            fetched.accounts.set(row.account_id, row.account_state);
        addQueues(fetched, rows, new Map(lanes.filter((id) => !fetched.queues.has(id)).map((id) => [id, entries])));
      }),
    );
  }

  const queues = new Map<string, number>();
  for (const { id, limit } of ofKind(needs, 'queuedOf')) queues.set(id, Math.max(limit, queues.get(id) ?? 0));
  if (queues.size > 0) {
    const ids = [...queues.keys()];
    work.push(
      query<QueueRow[]>(sql`
        SELECT u.lane, q.req_id, q.available_at, q.model, q.state
        FROM unnest(${ids}::text[], ${ids.map((id) => queues.get(id) ?? 0)}::int[]) AS u(lane, n)
        CROSS JOIN LATERAL (
          SELECT req_id, available_at, model, state FROM requests
          WHERE status = 'waiting' AND lane = u.lane COLLATE "C"
          ORDER BY available_at, req_id LIMIT u.n
        ) q
        ORDER BY u.lane COLLATE "C", q.available_at, q.req_id`).then((rows) => addQueues(fetched, rows, queues)),
    );
  }
  await Promise.all(work);
};

type QueueRow = {
  lane: string;
  req_id: string | null;
  available_at: number | null;
  model: string | null;
  state: RequestState | null;
};

/** Sets the queues of the lanes in `limits` (each read `limit` deep) from rows in dispatch order. */
const addQueues = (fetched: Fetched, rows: readonly QueueRow[], limits: ReadonlyMap<string, number>) => {
  const entries = new Map<string, { reqId: string; availableAt: number; model: string }[]>(
    [...limits.keys()].map((id) => [id, []]),
  );
  for (const { lane, req_id, available_at, model, state } of rows) {
    if (req_id === null || available_at === null || model === null) continue;
    entries.get(lane)?.push({ reqId: req_id, availableAt: available_at, model });
    if (!fetched.requests.has(req_id)) fetched.requests.set(req_id, state);
  }
  for (const [id, found] of entries)
    fetched.queues.set(id, { entries: found, complete: found.length < (limits.get(id) ?? 0) });
};
