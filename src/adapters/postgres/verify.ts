import { type BatchView, noCounts } from '../../domain/batch/state.js';
import { passwordCredentialKey, sessionCredentialKey } from '../../domain/commands.js';
import { maxDifferences, type VerifyReport } from '../../storage/verifyReport.js';
import { webhookSecretKeysOf } from '../../storage/verifyWebhooks.js';
import { type Db, type Query, sql } from './db.js';
import { verifyAccounts } from './verifyAccounts.js';
import { createVerifyCheck } from './verifyCheck.js';
import { verifyIdempotency, verifyRequests } from './verifyRequests.js';
import { verifyRows } from './verifyRows.js';
import { foldViewEvents } from './verifyViewEvents.js';

// The check in parts, in the order it runs: the log's other events folded (verifyViewEvents.ts), the requests and the
// idempotency index (verifyRequests.ts), the batch, file and webhook rows (verifyRows.ts), then accounts, their
// indexes and the counters (verifyAccounts.ts). `sameAsJson` (verifyValues.ts) is re-exported, as importers name it.
export { sameAsJson } from './verifyValues.js';

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

export const verifyInSnapshot = async (query: Query, pageSize: number): Promise<VerifyReport> => {
  const check = createVerifyCheck(query, pageSize);
  const { differences, differ } = check;

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

  // Accounts, keys, sessions, batches, files and webhooks: their few events, in the order of the log.
  const { account, webhooks, batchStates, files, uploads } = await foldViewEvents(check);

  const { requests, lineCounts, ...counted } = await verifyRequests(check);
  await verifyIdempotency(check);

  // A batch the machine never made (`none`) has no view, whatever lines name it.
  const rebuiltBatches = new Map<string, BatchView>();
  for (const [batchId, state] of batchStates)
    if (state.status !== 'none') rebuiltBatches.set(batchId, { state, counts: lineCounts.get(batchId) ?? noCounts });
  await verifyRows(check, rebuiltBatches, files, webhooks);

  const { rebuilt } = account;
  await verifyAccounts(check, { rebuilt, ...counted, rebuiltBatches, files, uploads });

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
