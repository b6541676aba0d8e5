/** One page of the log copied by `airs migrate` (`writePage`): its events, and what they change in the views. */
import { isAccountEvent } from '../../domain/account/events.js';
import type { AccountState, KeyState, SessionState } from '../../domain/account/state.js';
import { type BatchEvent, isBatchEvent } from '../../domain/batch/events.js';
import { addCounts, countsDeltaOf } from '../../domain/batch/lines.js';
import { type BatchView, evolveBatch, initialBatchState, noCounts } from '../../domain/batch/state.js';
import type { StoredEvent } from '../../domain/events.js';
import { type FileEvent, isFileEvent, isUploadEvent } from '../../domain/file/events.js';
import type { FileState } from '../../domain/file/state.js';
import type { AccountUploads } from '../../domain/file/uploads.js';
import { isRequestEvent, type RequestEvent } from '../../domain/request/events.js';
import { holdsText } from '../../domain/request/retention.js';
import { initialRequestState, type RequestState, tryEvolve } from '../../domain/request/state.js';
import type { DeliveryState } from '../../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../../domain/webhook/endpoint.js';
import { isWebhookDeliveryEvent, isWebhookEvent, type WebhookEvent } from '../../domain/webhook/events.js';
import type { Batch } from '../../ports/Store.js';
import type { LogSource } from '../../storage/logSource.js';
import {
  idempotencyKeyOf,
  projectAccountEvent,
  projectBatchChange,
  projectFileEvent,
  projectRequestChange,
  projectWebhookEvent,
} from '../../storage/projection.js';
import { type Query, sql } from './db.js';
import { Fetched, pairKey } from './fetched.js';
import { SourceDamaged } from './importErrors.js';
import { overlayTarget } from './overlay.js';
import { writeAll } from './writeAll.js';
import { Writes } from './writes.js';

const unique = (values: Iterable<string>) => [...new Set(values)];

type StateRow = { id: string; state: unknown };

const isLive = (state: RequestState) => state.status !== 'none' && state.status !== 'expired';

/**
 * Writes one page of events and what they change in the views. `lastSeq` is the log's end before the page.
 */
export const writePage = async (
  query: Query,
  source: LogSource,
  events: readonly StoredEvent[],
  lastSeq: number,
  chunkBytes: number,
): Promise<void> => {
  const fetched = new Fetched();
  const writes = new Writes();
  const requestEvents = events.filter((event): event is StoredEvent & RequestEvent => isRequestEvent(event));
  const accountEvents = events.filter(isAccountEvent) as (StoredEvent & {
    /** Absent on an admin key's events (they belong to no account). */
    accountId?: string;
    keyId?: string;
    sessionId?: string;
  })[];
  const batchEvents = events.filter((event): event is StoredEvent & BatchEvent => isBatchEvent(event));
  const fileEvents = events.filter((event): event is StoredEvent & FileEvent => isFileEvent(event));
  const webhookEvents = events.filter((event): event is StoredEvent & WebhookEvent => isWebhookEvent(event));
  if (
    requestEvents.length + accountEvents.length + batchEvents.length + fileEvents.length + webhookEvents.length !==
    events.length
  ) {
    const known = new Set<StoredEvent>([
      ...requestEvents,
      ...accountEvents,
      ...batchEvents,
      ...fileEvents,
      ...webhookEvents,
    ]);
    const odd = events.find((event) => !known.has(event));
    throw new SourceDamaged(`event ${odd?.seq}: ${odd?.type} is of no type the log holds`);
  }

  // What the page reads: the states its requests, accounts, keys and sessions were left in by the pages before.
  const byIds = async <V>(
    ids: readonly string[],
    map: Map<string, V | null>,
    select: (ids: string[]) => Promise<StateRow[]>,
  ) => {
    const wanted = unique(ids);
    if (wanted.length === 0) return;
    const rows = await select(wanted);
    for (const id of wanted) map.set(id, null);
    for (const row of rows) map.set(row.id, row.state as V);
  };
  // Batches: those whose events the page holds, and those of lines the page changes (a line names its batch in its
  // RequestQueued, or in its state: read with it).
  const batchIds = [
    ...batchEvents.map((event) => event.batchId),
    ...requestEvents.flatMap((event) =>
      event.type === 'RequestQueued' && event.batchId !== undefined ? [event.batchId] : [],
    ),
  ];
  await Promise.all([
    byIds<RequestState>(
      requestEvents.map((event) => event.reqId),
      fetched.requests,
      (ids) =>
        query<(StateRow & { batch_id: string | null; batch: BatchView | null })[]>(sql`
          SELECT r.req_id AS id, r.state, b.batch_id, b.state AS batch
          FROM requests r LEFT JOIN batches b ON b.batch_id = (r.state->'context'->>'batchId') COLLATE "C"
          WHERE r.req_id = ANY(${ids}::text[])`).then((rows) => {
          for (const { batch_id, batch } of rows) if (batch_id !== null) fetched.batches.set(batch_id, batch);
          return rows;
        }),
    ),
    byIds<BatchView>(batchIds, fetched.batches, (ids) =>
      query<StateRow[]>(sql`SELECT batch_id AS id, state FROM batches WHERE batch_id = ANY(${ids}::text[])`),
    ),
    byIds<FileState>(
      fileEvents.map((event) => event.fileId),
      fetched.files,
      (ids) => query<StateRow[]>(sql`SELECT file_id AS id, state FROM files WHERE file_id = ANY(${ids}::text[])`),
    ),
    byIds<AccountUploads>(
      fileEvents.flatMap((event) => (isUploadEvent(event) ? [event.accountId] : [])),
      fetched.uploads,
      (ids) =>
        query<StateRow[]>(
          sql`SELECT account_id AS id, uploads AS state FROM file_uploads WHERE account_id = ANY(${ids}::text[])`,
        ),
    ),
    byIds<WebhookEndpointState>(
      webhookEvents.map((event) => event.endpointId),
      fetched.webhookEndpoints,
      (ids) =>
        query<StateRow[]>(
          sql`SELECT endpoint_id AS id, state FROM webhook_endpoints WHERE endpoint_id = ANY(${ids}::text[])`,
        ),
    ),
    byIds<DeliveryState>(
      webhookEvents.flatMap((event) => (isWebhookDeliveryEvent(event) ? [event.deliveryId] : [])),
      fetched.webhookDeliveries,
      (ids) =>
        query<StateRow[]>(
          sql`SELECT delivery_id AS id, state FROM webhook_deliveries WHERE delivery_id = ANY(${ids}::text[])`,
        ),
    ),
    byIds<AccountState>(
      accountEvents.flatMap((event) => (typeof event.accountId === 'string' ? [event.accountId] : [])),
      fetched.accounts,
      (ids) =>
        query<StateRow[]>(sql`SELECT account_id AS id, state FROM accounts WHERE account_id = ANY(${ids}::text[])`),
    ),
    byIds<KeyState>(
      accountEvents.flatMap((event) => (typeof event.keyId === 'string' ? [event.keyId] : [])),
      fetched.keys,
      (ids) => query<StateRow[]>(sql`SELECT key_id AS id, state FROM keys WHERE key_id = ANY(${ids}::text[])`),
    ),
    byIds<SessionState>(
      accountEvents.flatMap((event) => (typeof event.sessionId === 'string' ? [event.sessionId] : [])),
      fetched.sessions,
      (ids) =>
        query<StateRow[]>(sql`SELECT session_id AS id, state FROM sessions WHERE session_id = ANY(${ids}::text[])`),
    ),
  ]);

  // Batches the page changes: their views as the pages before left them, and as this one leaves them.
  const batches = new Map<string, { before: BatchView | undefined; after: BatchView }>();
  const batchEntryOf = (batchId: string) => {
    let entry = batches.get(batchId);
    if (entry === undefined) {
      // Read above: with its events, with its line's RequestQueued, or with its line's row.
      if (!fetched.batches.has(batchId))
        throw new SourceDamaged(`batch ${batchId}: a line names it, the log never made it`);
      const before = fetched.batches.get(batchId) ?? undefined;
      entry = { before, after: before ?? { state: initialBatchState, counts: noCounts } };
      batches.set(batchId, entry);
    }
    return entry;
  };
  for (const event of batchEvents) {
    const entry = batchEntryOf(event.batchId);
    const state = evolveBatch(entry.after.state, event);
    if (state === entry.after.state)
      throw new SourceDamaged(
        `event ${event.seq} (${event.type} of ${event.batchId}) is not accepted by the batch machine`,
      );
    entry.after = { state, counts: entry.after.counts };
  }

  // Each request's events of the page folded by the machine's own step, from the state the pages before left; a
  // line's change of status counts in its batch.
  const touched = new Map<string, { before: RequestState; after: RequestState }>();
  for (const event of requestEvents) {
    let entry = touched.get(event.reqId);
    if (entry === undefined) {
      const state = fetched.requests.get(event.reqId) ?? initialRequestState;
      entry = { before: state, after: state };
      touched.set(event.reqId, entry);
    }
    const next = tryEvolve(entry.after, event);
    if (next === undefined)
      throw new SourceDamaged(
        `event ${event.seq} (${event.type} of ${event.reqId}) is not accepted by the request machine`,
      );
    const { batchId } = next.context;
    const delta = batchId === undefined ? undefined : countsDeltaOf(entry.after, next);
    if (batchId !== undefined && delta !== undefined) {
      const batch = batchEntryOf(batchId);
      batch.after = { state: batch.after.state, counts: addCounts(batch.after.counts, delta) };
    }
    entry.after = next;
  }

  // The idempotency entries a request's expiry may remove (only while they still name it): read first.
  const pairs = [...touched.values()]
    .filter(({ before, after }) => isLive(before) && !isLive(after) && idempotencyKeyOf(after) !== undefined)
    .map(({ after }) => [after.context.accountId, after.context.idempotencyKey as string] as const);
  if (pairs.length > 0) {
    const rows = await query<{ account_id: string; key: string; req_id: string }[]>(sql`
      SELECT i.account_id, i.key, i.req_id FROM idempotency i
      JOIN unnest(${pairs.map(([a]) => a)}::text[], ${pairs.map(([, k]) => k)}::text[]) AS u(account_id, key)
        ON i.account_id = u.account_id AND i.key = u.key`);
    for (const [accountId, key] of pairs) fetched.idempotency.set(pairKey(accountId, key), null);
    for (const row of rows) fetched.idempotency.set(pairKey(row.account_id, row.key), row.req_id);
  }

  // Projected as the store projects a batch: account, file and webhook events in order, then one change per request
  // and per batch.
  const { views } = overlayTarget(fetched, writes);
  for (const event of events) {
    if (isAccountEvent(event)) projectAccountEvent(views, event);
    else if (isFileEvent(event)) projectFileEvent(views, event);
    else if (isWebhookEvent(event)) projectWebhookEvent(views, event);
  }
  for (const { before, after } of touched.values()) projectRequestChange(views, before, after);
  for (const { before, after } of batches.values())
    if (after !== before && after.state.status !== 'none') projectBatchChange(views, before, after);
  writes.events = [...events];
  writes.lastSeq = events.at(-1)?.seq ?? lastSeq;

  // Requests in chunks of bounded text: each with the text its source record holds now (the last write of a request
  // is its final state, whose text that is; an earlier write's text is replaced by it).
  const requests = [...writes.requests];
  writes.requests.clear();
  const batch: Batch = { commands: [] };
  await writeAll(query, writes, batch, { lastSeq });
  let chunk = new Writes();
  let bytes = 0;
  const flush = async () => {
    if (chunk.requests.size === 0) return;
    await writeAll(query, chunk, batch, { lastSeq: writes.lastSeq as number });
    chunk = new Writes();
    bytes = 0;
  };
  for (const [reqId, write] of requests) {
    let text: string | undefined;
    if (holdsText(write.state.status)) {
      text = source.textOf(reqId);
      if (text === undefined) throw new SourceDamaged(`request ${reqId}: in the log but its record is missing`);
    }
    const size = text === undefined ? 0 : Buffer.byteLength(text);
    if (bytes > 0 && bytes + size > chunkBytes) await flush();
    chunk.requests.set(reqId, { ...write, text });
    bytes += size;
  }
  await flush();
};
