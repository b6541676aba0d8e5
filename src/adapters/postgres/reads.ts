import type { AccountState, KeyState, SessionState } from '../../domain/account/state.js';
import type { BatchView } from '../../domain/batch/state.js';
import type { StoredEvent } from '../../domain/events.js';
import type { FileState } from '../../domain/file/state.js';
import type { AccountUploads } from '../../domain/file/uploads.js';
import { queuePositionCap, queuePositionFromTallies } from '../../domain/queuePosition.js';
import type { RequestState } from '../../domain/request/state.js';
import type { TokenBucketKind } from '../../domain/tokens/tokenUse.js';
import {
  type DailyTokens,
  type ListName,
  type ListPage,
  maxListRows,
  type OpenBatch,
  type ReadModel,
  type RequestKind,
  type StoredRequest,
} from '../../ports/Store.js';
import { callBatches } from '../../storage/callBatches.js';
import { tallyQueue } from '../../storage/queueDepths.js';
import { bucketStarts, dayMs, hourMs } from '../../storage/timeBuckets.js';
import { type Query, type Statement, sql } from './db.js';
import { usageRowsOf } from './hourlyUsage.js';
import { webhookReadsOf } from './webhookReads.js';

/** The condition of each kind's partial index over an account's requests (schema.ts, 11), as the statement's text. */
const requestKindConditions = {
  interactive: 'AND NOT batch_line',
  batch: 'AND batch_line',
} as const satisfies Record<RequestKind, string>;

/** Events read per statement while the log is replayed. */
const eventPage = 1_000;

/** The table and id column of each list (an account's batches or files, by the index over (account_id, created_at,
 * id)). */
const lists = {
  accountBatches: { table: 'batches', id: 'batch_id' },
  accountFiles: { table: 'files', id: 'file_id' },
} as const satisfies Record<ListName, { table: string; id: string }>;

/**
 * A page of an account's batches or files (ListPage): in the index's order or its reverse, strictly beyond `from`; of
 * one purpose by the index over (account_id, purpose, created_at, file_id). `limit` rows at most (`maxListRows`).
 */
const listOf = async (query: Query, list: ListName, accountId: string, { from, order, limit, purpose }: ListPage) => {
  const rows = Math.min(limit, maxListRows);
  if (!(rows > 0)) return [];
  const { table, id } = lists[list];
  const [beyond, direction] = order === 'desc' ? ['<', 'DESC'] : ['>', 'ASC'];
  const values: unknown[] = [accountId, rows];
  const ofPurpose = list === 'accountFiles' && purpose !== undefined ? `AND purpose = $${values.push(purpose)}` : '';
  const after =
    from === undefined
      ? ''
      : `AND (created_at, ${id}) ${beyond} ($${values.push(from.createdAt)}::bigint, $${values.push(from.id)}::text COLLATE "C")`;
  const found = await query<{ id: string }[]>({
    text: `SELECT ${id} AS id FROM ${table} WHERE account_id = $1 ${ofPurpose} ${after}
      ORDER BY created_at ${direction}, ${id} ${direction} LIMIT $2`,
    values,
  });
  return found.map((row) => row.id);
};

/**
 * Accounts with batches not ended whose id sorts after `after` and (when given) not after `until`, in id order, `limit`
 * at most: a loose index scan (one hop of the open batches' index per account, however many batches each has).
 */
const openBatchAccountsBetween = async (query: Query, after: string, until: string | null, limit: number) => {
  const rows = await query<{ account_id: string }[]>(sql`
    WITH RECURSIVE open_accounts(account_id) AS (
      (SELECT account_id FROM batches WHERE open AND account_id > ${after}::text COLLATE "C"
        ORDER BY account_id LIMIT 1)
      UNION ALL
      SELECT (SELECT b.account_id FROM batches b WHERE b.open AND b.account_id > o.account_id
        ORDER BY b.account_id LIMIT 1)
      FROM open_accounts o
      WHERE o.account_id IS NOT NULL AND (${until}::text IS NULL OR o.account_id < ${until}::text COLLATE "C")
    )
    SELECT account_id FROM open_accounts
    WHERE account_id IS NOT NULL AND (${until}::text IS NULL OR account_id <= ${until}::text COLLATE "C")
    LIMIT ${limit}`);
  return rows.map((row) => row.account_id);
};

/**
 * The read model over PostgreSQL: each read one statement on the store's pool, so it sees everything committed before
 * it began, by any node (READ COMMITTED takes a snapshot per statement). Nothing is cached.
 */
export const readsOf = (query: Query, onChange: ReadModel['onChange']): ReadModel => {
  const one = async <T>(rows: Promise<readonly { value: T }[]>): Promise<T | undefined> => (await rows)[0]?.value;
  const requestsWithText = async (reqIds: readonly string[]): Promise<(StoredRequest | undefined)[]> => {
    if (reqIds.length === 0) return [];
    const rows = await query<{ req_id: string; state: RequestState; text: Buffer | null }[]>(sql`
      SELECT req_id, state, text FROM requests WHERE req_id = ANY(${[...reqIds]}::text[])`);
    const found = new Map(
      rows.map((row) => [
        row.req_id,
        { state: row.state, text: row.text === null ? undefined : row.text.toString('utf8') },
      ]),
    );
    return reqIds.map((reqId) => found.get(reqId));
  };
  // The attempts a claim starts each read their request in the same turn: one statement for them all (callBatches.ts).
  const requestsWithTextInOneRead = callBatches(requestsWithText);
  return {
    batch: (batchId) => one<BatchView>(query(sql`SELECT state AS value FROM batches WHERE batch_id = ${batchId}`)),
    file: (fileId) => one<FileState>(query(sql`SELECT state AS value FROM files WHERE file_id = ${fileId}`)),
    listOf: (list, accountId, page) => listOf(query, list, accountId, page),
    openBatches: async (limit) =>
      (
        await query<{ batch_id: string; account_id: string }[]>(sql`
          SELECT batch_id, account_id FROM batches WHERE open ORDER BY account_id, batch_id
          LIMIT ${Math.max(0, limit)}`)
      ).map((row): OpenBatch => ({ batchId: row.batch_id, accountId: row.account_id })),
    openBatchAccounts: async (after, limit) => {
      if (!(limit > 0)) return [];
      const accounts = await openBatchAccountsBetween(query, after ?? '', null, limit);
      // Wrap round: the accounts before and including `after`.
      if (after === undefined || accounts.length >= limit) return accounts;
      return [...accounts, ...(await openBatchAccountsBetween(query, '', after, limit - accounts.length))];
    },
    openBatchesOf: async (accountId, after, limit) => {
      if (!(limit > 0)) return [];
      const rows = await query<{ batch_id: string }[]>(sql`
        SELECT batch_id FROM batches WHERE open AND account_id = ${accountId}
          AND batch_id > ${after ?? ''}::text COLLATE "C"
        ORDER BY batch_id LIMIT ${limit}`);
      return rows.map((row) => row.batch_id);
    },
    isOpenBatchInput: async (fileId) =>
      (await one<boolean>(
        query(sql`SELECT EXISTS (SELECT 1 FROM batches WHERE open AND input_file_id = ${fileId}) AS value`),
      )) === true,
    processingCount: async (counter) =>
      (await one<number>(query(sql`SELECT count AS value FROM processing_counts WHERE counter = ${counter}`))) ?? 0,
    accountCount: async (counter) =>
      (await one<number>(query(sql`SELECT count AS value FROM account_counts WHERE counter = ${counter}`))) ?? 0,
    uploadsOf: async (accountId) =>
      (await one<AccountUploads>(
        query(sql`SELECT uploads AS value FROM file_uploads WHERE account_id = ${accountId}`),
      )) ?? [],
    lapsedUploads: async (now, limit) =>
      query<{ accountId: string; fileId: string }[]>(sql`
        SELECT f.account_id AS "accountId", u->>'fileId' AS "fileId"
        FROM file_uploads f CROSS JOIN LATERAL json_array_elements(f.uploads) AS u
        WHERE (u->>'heldUntil')::bigint <= ${now}
        LIMIT ${Math.max(0, limit)}`),
    ...webhookReadsOf(query),
    request: (reqId) => one<RequestState>(query(sql`SELECT state AS value FROM requests WHERE req_id = ${reqId}`)),
    requestWithText: requestsWithTextInOneRead,
    requestsWithText,
    requests: async (reqIds) => {
      if (reqIds.length === 0) return [];
      const rows = await query<{ req_id: string; state: RequestState }[]>(sql`
        SELECT req_id, state FROM requests WHERE req_id = ANY(${[...reqIds]}::text[])`);
      const found = new Map(rows.map((row) => [row.req_id, row.state]));
      return reqIds.map((reqId) => found.get(reqId));
    },
    account: (accountId) =>
      one<AccountState>(query(sql`SELECT state AS value FROM accounts WHERE account_id = ${accountId}`)),
    accountIdByEmail: (email) => one<string>(query(sql`SELECT account_id AS value FROM emails WHERE email = ${email}`)),
    accounts: async () =>
      (await query<{ state: AccountState }[]>(sql`SELECT state FROM accounts ORDER BY account_id`)).map(
        (row) => row.state,
      ),
    key: (keyId) => one<KeyState>(query(sql`SELECT state AS value FROM keys WHERE key_id = ${keyId}`)),
    keyIdByHash: (keyHash) =>
      one<string>(query(sql`SELECT key_id AS value FROM key_hashes WHERE key_hash = ${keyHash}`)),
    keysOf: async (accountId) =>
      (
        await query<{ state: KeyState }[]>(sql`SELECT state FROM keys WHERE account_id = ${accountId} ORDER BY key_id`)
      ).map((row) => row.state),
    // Asked on every API call (authentication): the calls of a turn share one statement (callBatches.ts).
    accountsVersion: (() => {
      const read = callBatches(async (calls: readonly undefined[]) => {
        const version =
          (await one<number>(query(sql`SELECT accounts_version AS value FROM log_head WHERE id = 1`))) ?? 0;
        return calls.map(() => version);
      });
      return () => read(undefined);
    })(),
    credential: (key) => one<string>(query(sql`SELECT value FROM credentials WHERE key = ${key}`)),
    session: (sessionId) =>
      one<SessionState>(query(sql`SELECT state AS value FROM sessions WHERE session_id = ${sessionId}`)),
    limiterState: (accountId, budget) =>
      one<number>(query(sql`SELECT tat AS value FROM limiter WHERE account_id = ${accountId} AND budget = ${budget}`)),
    requestsOf: async (accountId, { before, after, limit, kind }) => {
      if (!(limit > 0)) return [];
      // Of one kind: the very condition of that kind's partial index (schema.ts, 11), written into the statement's
      // text (a constant, never a value) so that the planner reads that index.
      const ofKind = kind === undefined ? '' : requestKindConditions[kind];
      const paged = (statement: Statement) =>
        query<{ state: RequestState }[]>({ ...statement, text: statement.text.replace('/*kind*/', ofKind) });
      if (after !== undefined) {
        const rows = await paged(sql`
          SELECT state FROM requests
          WHERE account_id = ${accountId} AND expires_at IS NOT NULL /*kind*/
            AND (created_at, req_id) > (${after.createdAt}::bigint, ${after.reqId}::text COLLATE "C")
          ORDER BY created_at, req_id LIMIT ${limit}`);
        return rows.map((row) => row.state).reverse();
      }
      const rows =
        before === undefined
          ? await paged(sql`
              SELECT state FROM requests WHERE account_id = ${accountId} AND expires_at IS NOT NULL /*kind*/
              ORDER BY created_at DESC, req_id DESC LIMIT ${limit}`)
          : await paged(sql`
              SELECT state FROM requests
              WHERE account_id = ${accountId} AND expires_at IS NOT NULL /*kind*/
                AND (created_at, req_id) < (${before.createdAt}::bigint, ${before.reqId}::text COLLATE "C")
              ORDER BY created_at DESC, req_id DESC LIMIT ${limit}`);
      return rows.map((row) => row.state);
    },
    requestCountsByHour: async (accountId, fromMs, hours) => {
      const counts = bucketStarts(fromMs, hourMs, hours).map(() => 0);
      if (counts.length === 0) return counts;
      const rows = await query<{ hour: number; count: number }[]>(sql`
        SELECT ((created_at - ${fromMs}) / ${hourMs})::int AS hour, count(*) AS count FROM requests
        WHERE account_id = ${accountId} AND expires_at IS NOT NULL
          AND created_at >= ${fromMs} AND created_at < ${fromMs + counts.length * hourMs}
        GROUP BY 1`);
      for (const { hour, count } of rows) counts[hour] = count;
      return counts;
    },
    usageRows: usageRowsOf(query),
    usageByDay: async (accountId, fromDay, days) => {
      const wanted = bucketStarts(fromDay, dayMs, days);
      if (wanted.length === 0) return [];
      const rows = await query<{ day: number; input_tokens: number; output_tokens: number }[]>(sql`
        SELECT day, input_tokens, output_tokens FROM usage_daily
        WHERE account_id = ${accountId} AND day = ANY(${wanted}::bigint[])`);
      const byDay = new Map(rows.map((row) => [row.day, row]));
      return wanted.map((day): DailyTokens => {
        const row = byDay.get(day);
        return { day, inputTokens: row?.input_tokens ?? 0, outputTokens: row?.output_tokens ?? 0 };
      });
    },
    tokenUse: async (accountId) =>
      (
        await query<{ kind: TokenBucketKind; start: number; tokens: number }[]>(sql`
        SELECT kind, start, tokens FROM token_use WHERE account_id = ${accountId}`)
      ).map(({ kind, start, tokens }) => ({ kind, start, tokens })),
    keyLastUsed: (keyId) => one<number>(query(sql`SELECT at AS value FROM key_last_used WHERE key_id = ${keyId}`)),
    dueForExpiry: async (now, limit) =>
      (
        await query<{ req_id: string }[]>(sql`
          SELECT req_id FROM requests WHERE expires_at <= ${now}
          ORDER BY expires_at, req_id LIMIT ${Math.max(0, limit)}`)
      ).map((row) => row.req_id),
    processing: async (limit) =>
      (
        await query<{ req_id: string }[]>(sql`
          SELECT req_id FROM requests WHERE status = 'processing' ORDER BY req_id LIMIT ${Math.max(0, limit)}`)
      ).map((row) => row.req_id),
    dueWork: async (now) => {
      // As storage/dueWork.ts: a waiting request available now or a lapsed lease; next, the earliest availability or
      // lease end after now.
      const [row] = await query<{ due: boolean; next: number | null }[]>(sql`
        SELECT
          EXISTS (SELECT 1 FROM requests WHERE status = 'waiting' AND available_at <= ${now})
            OR EXISTS (SELECT 1 FROM requests WHERE lease_until <= ${now}) AS due,
          LEAST(
            (SELECT min(available_at) FROM requests WHERE status = 'waiting' AND available_at > ${now}),
            (SELECT min(lease_until) FROM requests WHERE lease_until > ${now})) AS next`);
      return { now: row?.due === true, next: row?.next ?? undefined };
    },
    queueDepths: async (now, limit) => {
      // The dispatch index in its order (by lane), one entry more than `limit`: tallied as the other stores do.
      const rows = await query<{ model: string; available_at: number }[]>(sql`
        SELECT model, available_at FROM requests WHERE status = 'waiting'
        ORDER BY lane, available_at, req_id LIMIT ${Math.max(0, limit) + 1}`);
      return tallyQueue(
        rows.map((row) => ({ model: row.model, availableAt: row.available_at })),
        now,
        limit,
      );
    },
    queuePosition: async (request, now, promoteAfterMs) => {
      // As domain/queuePosition.ts, in one statement: the lanes with waiting work (a loose index scan, one hop of the
      // dispatch index per lane), each read once and `queuePositionCap` entries deep at most (its own lane: those
      // ahead of the request), tallied there.
      const promotedBy = promoteAfterMs === undefined ? null : now - promoteAfterMs;
      const rows = await query<{ lane: string; due: number; promoted: number; found: boolean }[]>(sql`
        WITH RECURSIVE waiting(lane) AS (
          (SELECT lane FROM requests WHERE status = 'waiting' ORDER BY lane LIMIT 1)
          UNION ALL
          SELECT (SELECT r.lane FROM requests r WHERE r.status = 'waiting' AND r.lane > w.lane
            ORDER BY r.lane LIMIT 1)
          FROM waiting w WHERE w.lane IS NOT NULL
        )
        SELECT w.lane, q.due, q.promoted,
          EXISTS (SELECT 1 FROM requests WHERE req_id = ${request.reqId} AND status = 'waiting'
            AND lane = ${request.lane}::text COLLATE "C") AS found
        FROM waiting w CROSS JOIN LATERAL (
          SELECT count(*) AS due,
            count(*) FILTER (WHERE ${promotedBy}::bigint IS NOT NULL AND e.available_at <= ${promotedBy}::bigint)
              AS promoted
          FROM (
            SELECT r.available_at FROM requests r
            WHERE r.status = 'waiting' AND r.lane = w.lane AND r.model = ${request.model}
              AND r.available_at <= ${now}::bigint
              AND (w.lane <> ${request.lane}::text COLLATE "C"
                OR (r.available_at, r.req_id) < (${request.availableAt}::bigint, ${request.reqId}::text COLLATE "C"))
            ORDER BY r.available_at, r.req_id LIMIT ${queuePositionCap}) e
        ) q
        WHERE w.lane IS NOT NULL`);
      if (rows[0]?.found !== true) return undefined;
      const own = rows.find((row) => row.lane === request.lane) ?? { due: 0, promoted: 0 };
      return queuePositionFromTallies(request, { ahead: own.due, promoted: own.promoted }, rows, now, promoteAfterMs);
    },
    events: (fromSeq = 1) =>
      (async function* () {
        let next = Math.max(1, fromSeq);
        for (;;) {
          const rows = await query<{ payload: StoredEvent }[]>(sql`
            SELECT payload FROM events WHERE seq >= ${next} ORDER BY seq LIMIT ${eventPage}`);
          for (const row of rows) yield row.payload;
          if (rows.length < eventPage) return;
          next = (rows.at(-1)?.payload.seq ?? next) + 1;
        }
      })(),
    lastSeq: async () => (await one<number>(query(sql`SELECT last_seq AS value FROM log_head WHERE id = 1`))) ?? 0,
    onChange,
  };
};
