import type { AccountState, KeyState, SessionState } from '../../domain/account/state.js';
import {
  linesAheadCounter,
  openBatchesCounter,
  storedBytesCounter,
  storedFilesCounter,
} from '../../domain/accountCounters.js';
import { type BatchView, isFinalBatch } from '../../domain/batch/state.js';
import { scanLimit } from '../../domain/claimFairly.js';
import { type Command, passwordCredentialKey, sessionCredentialKey } from '../../domain/commands.js';
import { dispatchLaneOf } from '../../domain/dispatchLane.js';
import type { FileState } from '../../domain/file/state.js';
import type { AccountUploads } from '../../domain/file/uploads.js';
import { accountCounter, modelCounter, upstreamCounter } from '../../domain/processingCounters.js';
import { holdsText } from '../../domain/request/retention.js';
import type { RequestState } from '../../domain/request/state.js';
import { staleBefore, tokenBucketKinds } from '../../domain/tokens/tokenUse.js';
import type { DeliveryState } from '../../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../../domain/webhook/endpoint.js';
import type { Batch, CommandOutcome } from '../../ports/Store.js';
import { groupOf } from '../../storage/projection.js';
import { writeBatch } from '../../storage/writeBatch.js';
import { type Query, type Statement, sql } from './db.js';
import { hourlyUsageWrite } from './hourlyUsage.js';
import {
  compareIds,
  defaultFetchSizes,
  Fetched,
  type FetchSizes,
  type Need,
  overlayTarget,
  pairKey,
  type RequestWrite,
  Writes,
} from './overlay.js';
import { lockSpace } from './schema.js';
import { deliveryPrefixOf, webhookDeliveryColumns, webhookEndpointColumns } from './webhookRows.js';

/** How many times a batch may find it needs more than was fetched before it gives up (a bug, not a load). */
const maxRounds = 50;

/** Request commands that may end their request (a webhook event: the outbox reads its account's endpoints). */
const mayEnd = new Set([
  'Cancel',
  'Expire',
  'TimeUp',
  'RecordSuccess',
  'RecordFailure',
  'FailOver',
  'OwnerGone',
  'Release',
]);
/** Batch commands that may end their batch, or fail it. */
const mayEndBatch = new Set(['EndBatch', 'FailValidation', 'CancelBatch', 'RecordWorkFailure', 'CancelFinalizing']);

/** What the commands of a batch will most likely read: fetched right behind the writer's lock. */
const prefetchOf = (commands: readonly Command[], sizes: FetchSizes): Need[] => {
  const needs: Need[] = [];
  for (const command of commands) {
    if (command.type === 'Account') {
      const { accountId } = command;
      needs.push({ kind: 'account', id: accountId });
      const inner = command.command as Record<string, unknown>;
      if (typeof inner.email === 'string') needs.push({ kind: 'email', id: inner.email });
      if (typeof inner.keyId === 'string') needs.push({ kind: 'key', id: inner.keyId });
      const key = inner.key as { keyId?: unknown } | undefined;
      if (typeof key?.keyId === 'string') needs.push({ kind: 'key', id: key.keyId });
      if (typeof inner.sessionId === 'string') {
        needs.push({ kind: 'session', id: inner.sessionId });
        needs.push({ kind: 'credential', id: sessionCredentialKey(inner.sessionId) });
      }
      if (inner.type === 'Suspend' || inner.type === 'SetPassword') needs.push({ kind: 'sessionsOf', id: accountId });
      if (inner.type === 'StartSession' || inner.type === 'SetPassword')
        needs.push({ kind: 'credential', id: passwordCredentialKey(accountId) });
      continue;
    }
    if (command.type === 'Claim') {
      needs.push({ kind: 'lapsed', now: command.now, limit: scanLimit });
      needs.push({ kind: 'processingCounts' });
      // The lanes in turn from the one served last, and (to wrap round) from the first, each with its first few
      // waiting requests: what most claims read, fetched right behind the writer's lock.
      // A claim of a few takes from a few lanes (its later rounds, or lanes with nothing it may take, fetch more).
      const page = {
        limit: Math.max(2, Math.min(sizes.accounts, command.max + 1)),
        entries: Math.max(1, Math.min(sizes.firstEntries, command.max + 1)),
      };
      needs.push({ kind: 'accountsAfter', after: command.after ?? '', ...page });
      if (command.after !== undefined) needs.push({ kind: 'accountsAfter', after: '', ...page });
      continue;
    }
    if (command.type === 'WebhookEndpoint') {
      const { accountId } = command.command;
      needs.push({ kind: 'webhookEndpoint', id: command.endpointId }, { kind: 'account', id: accountId });
      if (command.command.type === 'AddEndpoint') needs.push({ kind: 'webhookEndpointsOf', id: accountId });
      continue;
    }
    if (command.type === 'WebhookDelivery') {
      // With its endpoint (fetchInto).
      needs.push({ kind: 'webhookDelivery', id: command.deliveryId });
      continue;
    }
    if (command.type === 'Batch') {
      needs.push({ kind: 'batch', id: command.batchId });
      if (mayEndBatch.has(command.command.type)) needs.push({ kind: 'outboxOf', source: 'batch', id: command.batchId });
      if (command.command.type === 'CreateBatch') {
        needs.push({ kind: 'file', id: command.command.inputFileId });
        if (command.command.maxInProgress !== undefined)
          needs.push({ kind: 'accountCount', id: openBatchesCounter(command.command.accountId) });
      }
      continue;
    }
    if (command.type === 'File') {
      const inner = command.command;
      needs.push({ kind: 'file', id: command.fileId });
      // An upload's reservation, and its file: what the account keeps and its other uploads (uploadDecider.ts).
      if (
        inner.type === 'StartUpload' ||
        inner.type === 'EndUpload' ||
        (inner.type === 'CreateFile' && inner.maxStoredBytes !== undefined)
      ) {
        const accountId = inner.accountId as string;
        needs.push({ kind: 'uploads', id: accountId });
        needs.push({ kind: 'accountCount', id: storedBytesCounter(accountId) });
        needs.push({ kind: 'accountCount', id: storedFilesCounter(accountId) });
      }
      continue;
    }
    // A request's row comes with its batch's view when it is a batch's line (fetchInto): a line's change of status
    // changes its batch's counts.
    needs.push({ kind: 'request', id: command.reqId });
    if (mayEnd.has(command.type)) needs.push({ kind: 'outboxOf', source: 'request', id: command.reqId });
    if (command.type === 'FailOver')
      for (const upstream of command.upstreams)
        needs.push({ kind: 'processingCount', id: upstreamCounter(command.model, upstream.name) });
    if (command.type !== 'Submit') continue;
    if (command.batchId !== undefined) needs.push({ kind: 'batch', id: command.batchId });
    if (command.idempotency !== undefined)
      needs.push({ kind: 'idempotency', accountId: command.accountId, key: command.idempotency.key });
    if (command.maxQueued !== undefined) needs.push({ kind: 'queuedCount', id: command.accountId });
    if (command.maxStoredBytes !== undefined)
      needs.push(
        { kind: 'accountCount', id: storedBytesCounter(command.accountId) },
        { kind: 'accountCount', id: linesAheadCounter(command.accountId) },
      );
    if (command.startNow !== undefined) {
      needs.push({ kind: 'anyWaiting' });
      if (command.modelLimit !== undefined) needs.push({ kind: 'processingCount', id: modelCounter(command.model) });
      if (command.maxProcessing !== undefined)
        needs.push({ kind: 'processingCount', id: accountCounter(command.accountId) });
      for (const upstream of command.upstreams ?? [])
        needs.push({ kind: 'processingCount', id: upstreamCounter(command.model, upstream.name) });
    }
  }
  return needs;
};

const statementOf = (text: string, values: unknown[]): Statement => ({ text, values });

const ofKind = <K extends Need['kind']>(needs: readonly Need[], kind: K) =>
  needs.filter((need): need is Extract<Need, { kind: K }> => need.kind === kind);

const unique = (values: readonly string[]) => [...new Set(values)];

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
const fetchInto = async (query: Query, fetched: Fetched, needs: readonly Need[]): Promise<void> => {
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

/**
 * The endpoints of accounts, and what the outbox reads when requests or batches end (Need `outboxOf`), in ONE
 * statement: the accounts of the ending requests and batches, their endpoints not removed, and, for the sources whose
 * account has endpoints, every delivery already made of their events (by id prefix; on the hot path none). An account
 * without endpoints, the common case, costs this one small statement per batch and nothing more.
 */
const fetchOutbox = (query: Query, fetched: Fetched, needs: readonly Need[], work: Promise<void>[]) => {
  const accounts = unique(ofKind(needs, 'webhookEndpointsOf').map((need) => need.id)).filter(
    (id) => !fetched.webhookEndpointsOf.has(id),
  );
  const sources = ofKind(needs, 'outboxOf');
  const requests = unique(sources.filter((need) => need.source === 'request').map((need) => need.id));
  const batches = unique(sources.filter((need) => need.source === 'batch').map((need) => need.id));
  if (accounts.length + requests.length + batches.length === 0) return;
  type Row = { kind: 'account' | 'endpoint' | 'prefix' | 'delivery'; id: string; state: unknown };
  work.push(
    query<Row[]>(sql`
      WITH sources AS (
        SELECT r.account_id, u.prefix
        FROM unnest(${requests}::text[], ${requests.map(deliveryPrefixOf)}::text[]) AS u(id, prefix)
        JOIN requests r ON r.req_id = u.id
        UNION ALL
        SELECT b.account_id, u.prefix
        FROM unnest(${batches}::text[], ${batches.map(deliveryPrefixOf)}::text[]) AS u(id, prefix)
        JOIN batches b ON b.batch_id = u.id
      ), accounts AS (
        SELECT account_id FROM sources UNION SELECT a COLLATE "C" FROM unnest(${accounts}::text[]) AS a
      ), endpoints AS (
        SELECT e.endpoint_id, e.state FROM accounts a JOIN webhook_endpoints e ON e.account_id = a.account_id
        WHERE e.listed
      ), prefixes AS (
        SELECT DISTINCT s.prefix FROM sources s
        WHERE EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.account_id = s.account_id AND e.listed)
      )
      SELECT 'account' AS kind, account_id AS id, NULL::json AS state FROM accounts
      UNION ALL SELECT 'endpoint', endpoint_id, state FROM endpoints
      UNION ALL SELECT 'prefix', prefix, NULL FROM prefixes
      UNION ALL
      SELECT 'delivery', d.delivery_id, d.state FROM prefixes p JOIN webhook_deliveries d
        ON d.delivery_id >= p.prefix COLLATE "C" AND d.delivery_id < (p.prefix || chr(1114111)) COLLATE "C"`).then(
      (rows) => {
        const endpointsOf = new Map<string, WebhookEndpointState[]>();
        for (const row of rows) {
          if (row.kind === 'account') endpointsOf.set(row.id, []);
          else if (row.kind === 'endpoint') {
            const state = row.state as WebhookEndpointState;
            fetched.webhookEndpoints.set(row.id, state);
            const ofAccount = endpointsOf.get(state.accountId);
            if (ofAccount === undefined) endpointsOf.set(state.accountId, [state]);
            else ofAccount.push(state);
          } else if (row.kind === 'prefix') {
            fetched.deliveryPrefixes.add(row.id);
            fetched.deliveryPrefixLengths.add(row.id.length);
          } else fetched.webhookDeliveries.set(row.id, row.state as DeliveryState);
        }
        for (const [accountId, states] of endpointsOf)
          fetched.webhookEndpointsOf.set(
            accountId,
            states
              .sort((a, b) => a.createdAt - b.createdAt || compareIds(a.endpointId, b.endpointId))
              .map((state) => state.endpointId),
          );
      },
    ),
  );
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

/** The columns of a request's row that its indexes are made of: each a function of its state (projection.ts). */
export const requestColumns = (state: RequestState) => {
  const { context, status } = state;
  return {
    account_id: context.accountId,
    status,
    // The dispatch index's lane (projection.ts, dispatchKeyOf), while the request waits.
    lane: status === 'waiting' ? dispatchLaneOf(context) : null,
    model: context.model,
    created_at: context.createdAt,
    available_at: context.availableAt,
    expires_at: groupOf.expiry(state) ?? null,
    lease_until: groupOf.processing(state) ?? null,
    // A batch's line or a request made on its own: the dashboard's Requests filter reads each kind by its own index.
    batch_line: context.batchId !== undefined,
  };
};

/** The columns of a batch's row its indexes are over: an account's batches (projection.ts, accountBatchKeyOf) and
 * the open ones, by account and by input file (accountOpenBatchKeyOf, openBatchInputKeyOf). */
export const batchColumns = (view: BatchView) => ({
  account_id: view.state.context.accountId,
  created_at: view.state.context.createdAt,
  open: !isFinalBatch(view.state.status),
  input_file_id: view.state.context.inputFileId,
});

/** The columns of a file's row its index is over: an account's files, with their purpose (accountFileKeyOf). */
export const fileColumns = (file: FileState) => ({
  account_id: file.accountId,
  created_at: file.createdAt,
  purpose: file.purpose,
});

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

/** The channel every node LISTENs on; each commit that appends events NOTIFYs it. */
export const changesChannel = 'airs_changes';
/** The payload on that channel of an ask to reload the config (`airs models reload`); a commit's is its last seq. */
export const reloadAskedPayload = 'reload-asked';

/**
 * Decides and writes one batch inside the transaction `query(sql`: takes the log's writer lock, fetches what the batch reads,
 * decides it (again, with more fetched, as long as it needs more), and writes it. Returns the outcomes and the last
 * sequence number the batch took (`from` when it appended nothing).
 */
export const commitInTransaction = async (
  query: Query,
  batch: Batch,
  sizes: FetchSizes = defaultFetchSizes,
  options: { readonly webhookRetentionMs?: number | undefined } = {},
): Promise<{ outcomes: (CommandOutcome | Error)[]; from: number; to: number; rounds: number }> => {
  // One writer at a time, in every node, until this transaction ends (PostgreSQL releases the lock after the commit
  // is visible): every batch decides against everything committed before it, and takes the sequence numbers after the
  // last committed batch's. So numbers are given in commit order, with no gap a reader could pass (unlike a sequence
  // or bigserial, which hands out numbers before commit, so a later number may be visible before an earlier one).
  // The lock's statement goes first; what follows is queued behind it on the same connection and runs once it is held.
  const fetched = new Fetched(sizes);
  const locked = query(sql`SELECT pg_advisory_xact_lock(${lockSpace.log}::int, 1)`);
  const headRead = query<{ last_seq: number }[]>(sql`SELECT last_seq FROM log_head WHERE id = 1`);
  const [, [head]] = await Promise.all([
    locked,
    headRead,
    fetchInto(query, fetched, prefetchOf(batch.commands, sizes)),
  ]);
  if (head === undefined) throw new Error('the log_head row is missing: not an airs database');
  for (let round = 1; ; round++) {
    fetched.needs = [];
    const writes = new Writes();
    let result: ReturnType<typeof writeBatch> | undefined;
    let fault: unknown;
    try {
      result = writeBatch(overlayTarget(fetched, writes, options), batch.commands, head.last_seq);
    } catch (error) {
      fault = error;
    }
    if (fetched.needs.length > 0) {
      if (round >= maxRounds) throw new Error(`a batch still needed more reads after ${maxRounds} rounds`);
      await fetchInto(query, fetched, fetched.needs);
      continue;
    }
    if (result === undefined) throw fault;
    await writeAll(query, writes, batch, { lastSeq: head.last_seq });
    return { outcomes: result.outcomes, from: head.last_seq, to: result.lastSeq, rounds: round };
  }
};
