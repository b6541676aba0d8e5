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
import type { KeptKind, LogSource } from '../../storage/logSource.js';
import {
  idempotencyKeyOf,
  projectAccountEvent,
  projectBatchChange,
  projectFileEvent,
  projectRequestChange,
  projectWebhookEvent,
} from '../../storage/projection.js';
import type { VerifyReport } from '../../storage/verifyReport.js';
import { writeAll } from './batch.js';
import { type Db, type Query, sql } from './db.js';
import { Fetched, overlayTarget, pairKey, Writes } from './overlay.js';
import { lockSpace, migrateIn, migrations } from './schema.js';
import { sameAsJson, verifyInSnapshot } from './verify.js';

/**
 * `airs migrate`: an LMDB data directory copied into an empty PostgreSQL database, in ONE transaction.
 *
 * - The log is read from one LMDB read transaction (one snapshot of the source, whatever a process writes meanwhile),
 *   record by record, and appended to the events table a page at a time, as it is (same sequence numbers, same
 *   payloads as the store writes them).
 * - Every view is rebuilt from those events, page by page, by the code the PostgreSQL store writes its batches with:
 *   each request's state before the page is read back from the requests table (written by the pages before, in this
 *   transaction), the page's events are folded by the machine's own step (`tryEvolve`), the account and file events
 *   and the request changes are projected (`projectAccountEvent`, `projectFileEvent`, `projectRequestChange`, and
 *   `projectWebhookEvent` for webhook endpoints and deliveries) through the store's overlay into a `Writes`, and `writeAll` (batch.ts) writes them: rows, counters, usage per day,
 *   idempotency index, log head. A batch's view is its own events folded by its machine (`evolveBatch`) and its lines'
 *   counts, summed from each of its lines' changes of status as the writer sums them (`countsDeltaOf`), then
 *   projected (`projectBatchChange`).
 * - What is kept beside the log and not in it is copied from the source: the texts (a request's prompt or response, as
 *   its record holds it now), the credentials (password and session hashes) and the keys' last uses.
 * - Then the copy is checked in the same transaction before it commits: every request row against the source's record
 *   (view compared as encoded bytes, the same text), every batch, file, webhook endpoint and delivery against the
 *   source's (as JSON), and the whole database by `airs replay --verify`'s own check (`verifyInSnapshot`). Any difference rolls everything back.
 *
 * Atomic: the schema (made here by the store's own migrations) and every row commit together or not at all; a copy
 * that fails, is interrupted or whose process dies leaves the database as it was (PostgreSQL rolls back a transaction
 * whose connection ends), so a half-copied database never exists. The schema's advisory lock and the log's writer lock
 * are held throughout: a node started on the database meanwhile waits, then finds the copy.
 *
 * Memory does not grow with the data: events are read and written a page at a time, and a page's Fetched/Writes hold
 * only what its events touch; texts are read from the source when their page is written, in chunks of bounded bytes.
 * (The final check holds accounts, keys and sessions in maps, as `airs replay --verify` does.)
 */

/** The target is not empty: nothing was written. */
export class TargetNotEmpty extends Error {
  override name = 'TargetNotEmpty';
}

/** The source cannot be copied as it is (its log does not fold, or its records differ from its log). */
export class SourceDamaged extends Error {
  override name = 'SourceDamaged';
}

/** The copy did not verify (a bug of this code, or a log the machine does not accept): nothing was committed. */
export class CopyDiffers extends Error {
  override name = 'CopyDiffers';
}

/** Where a copy is: events copied so far (of the log's `total`), requests checked against the source, then the whole
 * copy verified (`done` 0). */
export type ImportProgress = {
  readonly phase: 'events' | 'checking' | 'verifying';
  readonly done: number;
  readonly total: number;
};

export type ImportOptions = {
  /** The database as a person reads it (no password), for messages. */
  readonly where: string;
  /** Events per page (tests: tiny, so that requests span pages). */
  readonly pageEvents?: number;
  /** Text bytes per statement, at most (one text larger than this goes alone). */
  readonly chunkBytes?: number;
  readonly onProgress?: (progress: ImportProgress) => void;
  /** Called after the copy is written and checked, before the commit (tests: a failure here must leave nothing). */
  readonly beforeCommit?: () => void | Promise<void>;
};

export type ImportSummary = VerifyReport & { readonly credentials: number };

/** The tables the store's migrations make (and the version table): what an airs database may hold. */
const airsTables = (): ReadonlySet<string> => {
  const names = new Set(['airs_schema_version']);
  for (const text of migrations)
    for (const match of text.matchAll(/CREATE TABLE (?:IF NOT EXISTS )?(\w+)/gi)) names.add(match[1] as string);
  return names;
};

/** Tables that may hold rows in an airs database that has no events yet (a server was started on it and took calls:
 * the log head, the schema's version, throttles and rate-limit states). */
const operational = new Set(['airs_schema_version', 'log_head', 'limiter', 'attempts']);

/**
 * Refuses a target that is not empty: any table, view or sequence outside airs's own, or airs's tables holding any
 * event or view row. Airs's tables with nothing in them (a node was started on the database first) are accepted.
 */
const checkEmpty = async (query: Query, where: string): Promise<void> => {
  const relations = await query<{ schema: string; name: string }[]>(sql`
    SELECT n.nspname AS schema, c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S') AND n.nspname <> 'information_schema'
      AND left(n.nspname, 3) <> 'pg_'
    ORDER BY 1, 2`);
  const ours = airsTables();
  const current = (await query<{ schema: string }[]>(sql`SELECT current_schema() AS schema`))[0]?.schema;
  const others = relations.filter((r) => r.schema !== current || !ours.has(r.name));
  if (others.length > 0) {
    const named = others.slice(0, 3).map((r) => `${r.schema}.${r.name}`);
    throw new TargetNotEmpty(
      `the database ${where} is not empty: it holds ${others.length} table(s) that are not airs's (${named.join(', ')}${others.length > 3 ? ', …' : ''}); migrate into a new, empty database (CREATE DATABASE)`,
    );
  }
  if (relations.length === 0) return;
  if (!relations.some((r) => r.name === 'airs_schema_version'))
    throw new TargetNotEmpty(
      `the database ${where} is not empty: it holds some of airs's tables without their schema version; migrate into a new, empty database (CREATE DATABASE)`,
    );
  // Airs's schema, at this version or upgraded to it (a newer one is refused by the migrations themselves).
  try {
    await migrateIn(query, where);
  } catch (error) {
    throw new TargetNotEmpty((error as Error).message);
  }
  const [events] = await query<{ n: number }[]>(sql`SELECT count(*)::float8 AS n FROM events`);
  if ((events?.n ?? 0) > 0)
    throw new TargetNotEmpty(
      `the database ${where} already holds an airs store with ${events?.n} events; migrate into a new, empty database (CREATE DATABASE), or keep using this one`,
    );
  for (const { name } of relations) {
    if (operational.has(name)) continue;
    const [row] = await query<{ any: boolean }[]>({ text: `SELECT EXISTS (SELECT 1 FROM ${name}) AS any`, values: [] });
    if (row?.any === true)
      throw new TargetNotEmpty(
        `the database ${where} is not empty: airs's table ${name} holds rows though the log is empty; migrate into a new, empty database (CREATE DATABASE)`,
      );
  }
  const [head] = await query<{ last_seq: number }[]>(sql`SELECT last_seq FROM log_head WHERE id = 1`);
  if (head === undefined || Number(head.last_seq) !== 0)
    throw new TargetNotEmpty(`the database ${where} is not empty: its log head is not at the start`);
};

const unique = (values: Iterable<string>) => [...new Set(values)];

type StateRow = { id: string; state: unknown };

const isLive = (state: RequestState) => state.status !== 'none' && state.status !== 'expired';

/**
 * Writes one page of events and what they change in the views. `lastSeq` is the log's end before the page.
 */
const writePage = async (
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

/** Rows in chunks of `size`, from an iterable read lazily. */
async function* chunksOf<T>(rows: Iterable<T>, size: number): AsyncGenerator<T[]> {
  let chunk: T[] = [];
  for (const row of rows) {
    chunk.push(row);
    if (chunk.length >= size) {
      yield chunk;
      chunk = [];
    }
  }
  if (chunk.length > 0) yield chunk;
}

/**
 * Every request row of the copy against the source's record of it, both in id order (the columns' `COLLATE "C"` and
 * LMDB's byte keys order them alike), a page at a time: the same view (as encoded bytes) and the same text. A record the
 * log does not make, or one that differs, is damage of the source (its views do not follow its log).
 */
const compareWithSource = async (
  query: Query,
  source: LogSource,
  pageSize: number,
  onRow: () => void,
): Promise<void> => {
  const records = source.requestRecords()[Symbol.iterator]();
  let next = records.next();
  await query({
    text: 'DECLARE airs_migrate_requests NO SCROLL CURSOR FOR SELECT req_id, state, text FROM requests ORDER BY req_id',
    values: [],
  });
  for (;;) {
    const rows = await query<{ req_id: string; state: RequestState; text: Buffer | null }[]>({
      text: `FETCH FORWARD ${pageSize} FROM airs_migrate_requests`,
      values: [],
    });
    for (const row of rows) {
      onRow();
      if (next.done) throw new SourceDamaged(`request ${row.req_id}: in the log but its record is missing`);
      const record = next.value;
      const id = record.reqId;
      if (id !== row.req_id)
        throw new SourceDamaged(
          id < row.req_id
            ? `request ${id}: its record is stored but the log never made it`
            : `request ${row.req_id}: in the log but its record is missing`,
        );
      if (!record.holds(row.state))
        throw new SourceDamaged(`request ${id}: its record differs from the state its events give`);
      const text = record.text();
      if (!text.equals(row.text ?? Buffer.alloc(0)))
        throw new SourceDamaged(`request ${id}: its text was not copied as stored`);
      next = records.next();
    }
    if (rows.length < pageSize) break;
  }
  await query({ text: 'CLOSE airs_migrate_requests', values: [] });
  if (!next.done) {
    throw new SourceDamaged(`request ${next.value.reqId}: its record is stored but the log never made it`);
  }
};

/**
 * Every batch's, file's, webhook endpoint's or delivery's row of the copy against the source's (a page of the source's at a time): the same view, and
 * as many rows as the source holds. A source view the log does not make, or one that differs, is damage of the source.
 */
const compareKeptWithSource = async (
  query: Query,
  source: LogSource,
  kind: KeptKind,
  pageSize: number,
): Promise<void> => {
  const kept = {
    batch: ['batches', 'batch_id'],
    file: ['files', 'file_id'],
    'webhook endpoint': ['webhook_endpoints', 'endpoint_id'],
    'webhook delivery': ['webhook_deliveries', 'delivery_id'],
  } as const;
  const [table, id] = kept[kind];
  let held = 0;
  for await (const rows of chunksOf(source.kept(kind), pageSize)) {
    const ids = rows.map((row) => row.id);
    const stored = await query<{ id: string; state: unknown }[]>({
      text: `SELECT ${id} AS id, state FROM ${table} WHERE ${id} = ANY($1::text[])`,
      values: [ids],
    });
    const copies = new Map(stored.map((row) => [row.id, row.state]));
    for (const row of rows) {
      const copy = copies.get(row.id);
      if (copy === undefined)
        throw new SourceDamaged(`${kind} ${row.id}: its record is stored but the log never made it`);
      if (!sameAsJson(copy, row.state()))
        throw new SourceDamaged(`${kind} ${row.id}: its record differs from the view its events give`);
    }
    held += rows.length;
  }
  const [copied] = await query<{ n: number }[]>({ text: `SELECT count(*)::float8 AS n FROM ${table}`, values: [] });
  if ((copied?.n ?? 0) !== held)
    throw new SourceDamaged(`${table}: the log makes ${copied?.n ?? 0}, the data directory holds ${held}`);
};

/**
 * Copies the store `source` reads (an LMDB data directory, read by its adapter's logSource.ts) into the database of `db` (a
 * pool of one connection is enough), in one transaction, and closes the source's snapshot; throws `TargetNotEmpty`,
 * `SourceDamaged` or `CopyDiffers` (nothing committed) or the database's own error.
 */
export const importLog = async (db: Db, source: LogSource, options: ImportOptions): Promise<ImportSummary> => {
  const pageEvents = options.pageEvents ?? 2_000;
  const chunkBytes = options.chunkBytes ?? 8 * 1024 * 1024;
  try {
    return await db.begin(async (query) => {
      // No node migrates the schema or appends to the log until this commits (or rolls back).
      await query(sql`SELECT pg_advisory_xact_lock(${lockSpace.schema}::int, 0)`);
      await checkEmpty(query, options.where);
      await migrateIn(query, options.where);
      await query(sql`SELECT pg_advisory_xact_lock(${lockSpace.log}::int, 1)`);

      const total = source.lastSeq();
      const progress = (phase: ImportProgress['phase'], done: number) => options.onProgress?.({ phase, done, total });
      let page: StoredEvent[] = [];
      let lastSeq = 0;
      let expected = 1;
      const flushPage = async () => {
        if (page.length === 0) return;
        await writePage(query, source, page, lastSeq, chunkBytes);
        lastSeq = (page.at(-1) as StoredEvent).seq;
        page = [];
        progress('events', lastSeq);
      };
      progress('events', 0);
      for (const { key, visit } of source.records()) {
        try {
          visit((event) => {
            if (event.seq !== expected)
              throw new SourceDamaged(`the log has a gap: expected event ${expected}, found ${event.seq}`);
            expected++;
            page.push({ ...event });
          });
        } catch (error) {
          if (error instanceof SourceDamaged) throw error;
          throw new SourceDamaged(`log record ${String(key)} cannot be read: ${(error as Error).message}`);
        }
        if (key !== expected - 1)
          throw new SourceDamaged(`log record ${String(key)}: its last event is ${expected - 1}`);
        if (page.length >= pageEvents) await flushPage();
      }
      await flushPage();
      if (lastSeq !== total)
        throw new SourceDamaged(`the log ends at event ${lastSeq} but the data directory says ${total}`);

      // Kept beside the log, not in it: password and session hashes, keys' last uses.
      let credentials = 0;
      for await (const rows of chunksOf(source.credentials(), 1_000)) {
        const writes = new Writes();
        for (const { key, value } of rows) writes.credentials.set(key, value);
        credentials += rows.length;
        await writeAll(query, writes, { commands: [] }, { lastSeq });
      }
      for await (const keyUses of chunksOf(source.keyUses(), 1_000)) {
        await writeAll(query, new Writes(), { commands: [], keyUses }, { lastSeq });
      }

      // The copy checked before it commits: against the source, then as `airs replay --verify` checks a database.
      let compared = 0;
      await compareWithSource(query, source, 1_000, () => {
        if (++compared % 10_000 === 0) progress('checking', compared);
      });
      await compareKeptWithSource(query, source, 'batch', 1_000);
      await compareKeptWithSource(query, source, 'file', 1_000);
      await compareKeptWithSource(query, source, 'webhook endpoint', 1_000);
      await compareKeptWithSource(query, source, 'webhook delivery', 1_000);
      progress('verifying', 0);
      const report = await verifyInSnapshot(query, 1_000);
      if (report.differences.length > 0)
        throw new CopyDiffers(
          `the copy does not verify (${report.differences.length} difference(s), the first: ${report.differences[0]}); nothing was written`,
        );
      await options.beforeCommit?.();
      return { ...report, credentials };
    });
  } finally {
    source.close();
  }
};
