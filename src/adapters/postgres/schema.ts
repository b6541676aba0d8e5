import { type Db, type Query, sql } from './db.js';
import { hourlyUsageMigration } from './hourlyUsage.js';

/**
 * The PostgreSQL store's tables, made and upgraded by numbered migrations when a store opens. Every node opening the
 * database at once is safe: the migrations run in one transaction under an advisory lock (DDL is transactional in
 * PostgreSQL), so one node applies them and the others find them applied. A database whose schema is newer than this
 * code knows is refused, as an LMDB data directory of another layout is.
 *
 * Ids and names are `COLLATE "C"` (byte order, which is code-point order for UTF-8): the order LMDB's keys and the
 * memory store give them, whatever the database's own collation. Times are milliseconds in `bigint`. Views are
 * `json` (kept as written: any string JSON can hold, NUL included, which `jsonb` and `text` refuse); request texts
 * are `bytea` for the same reason, stored out of line uncompressed (a full disk refuses a big prompt, and large
 * texts cost no compression on the hot path).
 *
 * The request indexes of the LMDB store (dispatch, by account, expiry, processing) are partial indexes over columns of
 * the request row, each a function of the request's state that the projection sets on every write (`requestColumns`);
 * so are the batch and file indexes (an account's batches, its files, of one purpose too, the open batches) over the
 * batch and file rows (`batchColumns`, `fileColumns`), and the webhook indexes over the endpoint and delivery rows
 * (`webhookEndpointColumns`, `webhookDeliveryColumns`).
 */

/** Namespaces of this store's advisory locks (the first argument of the two-key form). */
export const lockSpace = {
  /** (lockSpace.schema, 0): migrations. */
  schema: 0x41495253,
  /** (lockSpace.log, 1): the single writer of the log. */
  log: 0x41495254,
  /** (lockSpace.limiter, hashtext(key)): a rate-limit budget. */
  limiter: 0x41495255,
  /** (lockSpace.throttle, hashtext(key)): a throttle key (of the table `attempts`). */
  throttle: 0x41495256,
} as const;

export const migrations: readonly string[] = [
  // 1: the log, the views, the indexes, the operational tables.
  `
  CREATE TABLE log_head (
    id smallint PRIMARY KEY CHECK (id = 1),
    last_seq bigint NOT NULL,
    accounts_version bigint NOT NULL
  );
  INSERT INTO log_head (id, last_seq, accounts_version) VALUES (1, 0, 0);

  CREATE TABLE events (
    seq bigint PRIMARY KEY,
    payload json NOT NULL
  );

  CREATE TABLE requests (
    req_id text COLLATE "C" PRIMARY KEY,
    account_id text COLLATE "C" NOT NULL,
    status text NOT NULL,
    model text COLLATE "C" NOT NULL,
    created_at bigint NOT NULL,
    available_at bigint NOT NULL,
    expires_at bigint,
    lease_until bigint,
    state json NOT NULL,
    text bytea
  );
  ALTER TABLE requests ALTER COLUMN text SET STORAGE EXTERNAL;
  CREATE INDEX requests_dispatch ON requests (account_id, available_at, req_id) WHERE status = 'waiting';
  CREATE INDEX requests_by_account ON requests (account_id, created_at, req_id) WHERE expires_at IS NOT NULL;
  CREATE INDEX requests_expiry ON requests (expires_at, req_id) WHERE expires_at IS NOT NULL;
  CREATE INDEX requests_processing ON requests (lease_until, req_id) WHERE lease_until IS NOT NULL;

  CREATE TABLE accounts (
    account_id text COLLATE "C" PRIMARY KEY,
    state json NOT NULL
  );
  CREATE TABLE emails (
    email text COLLATE "C" PRIMARY KEY,
    account_id text COLLATE "C" NOT NULL
  );
  CREATE TABLE keys (
    key_id text COLLATE "C" PRIMARY KEY,
    account_id text COLLATE "C" NOT NULL,
    state json NOT NULL
  );
  CREATE INDEX keys_by_account ON keys (account_id, key_id);
  CREATE TABLE key_hashes (
    key_hash text COLLATE "C" PRIMARY KEY,
    key_id text COLLATE "C" NOT NULL
  );
  CREATE TABLE sessions (
    session_id text COLLATE "C" PRIMARY KEY,
    account_id text COLLATE "C" NOT NULL,
    state json NOT NULL
  );
  CREATE INDEX sessions_by_account ON sessions (account_id, session_id);
  CREATE TABLE credentials (
    key text COLLATE "C" PRIMARY KEY,
    value text NOT NULL
  );
  CREATE TABLE idempotency (
    account_id text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    req_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (account_id, key)
  );
  CREATE TABLE queued_counts (
    account_id text COLLATE "C" PRIMARY KEY,
    count bigint NOT NULL
  );
  CREATE TABLE processing_counts (
    model text COLLATE "C" PRIMARY KEY,
    count bigint NOT NULL
  );
  CREATE TABLE usage_daily (
    account_id text COLLATE "C" NOT NULL,
    day bigint NOT NULL,
    input_tokens bigint NOT NULL,
    output_tokens bigint NOT NULL,
    PRIMARY KEY (account_id, day)
  );
  CREATE TABLE key_last_used (
    key_id text COLLATE "C" PRIMARY KEY,
    at bigint NOT NULL
  );
  CREATE TABLE limiter (
    account_id text COLLATE "C" NOT NULL,
    budget text COLLATE "C" NOT NULL,
    tat double precision NOT NULL,
    PRIMARY KEY (account_id, budget)
  );
  CREATE TABLE attempts (
    key text COLLATE "C" PRIMARY KEY,
    times json NOT NULL,
    expires_at bigint NOT NULL
  );
  CREATE INDEX attempts_expiry ON attempts (expires_at, key);
  `,
  // 2: requests being processed counted per account and per account and model too (domain/processingCounters.ts
  // names the counters: the names below must stay the same as its), for plans' maxProcessing and the workers' share.
  `
  ALTER TABLE processing_counts RENAME COLUMN model TO counter;
  INSERT INTO processing_counts (counter, count)
    SELECT chr(31) || account_id, count(*) FROM requests WHERE status = 'processing' GROUP BY account_id
    UNION ALL
    SELECT chr(31) || account_id || chr(31) || model, count(*) FROM requests WHERE status = 'processing'
    GROUP BY account_id, model;
  `,
  // 3: uploaded files' bytes (fileBytes.ts): an entry per blob, written before its parts, and its parts, stored out of
  // line uncompressed as request texts are (files are mostly compressed already, or JSONL read once).
  `
  CREATE TABLE file_blobs (
    blob_id text COLLATE "C" PRIMARY KEY,
    started_at bigint NOT NULL
  );
  CREATE TABLE file_parts (
    blob_id text COLLATE "C" NOT NULL REFERENCES file_blobs ON DELETE CASCADE,
    part integer NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (blob_id, part)
  );
  ALTER TABLE file_parts ALTER COLUMN data SET STORAGE EXTERNAL;
  `,
  // 4: batches and files (contract 16), and the dispatch lanes. A batch's view is its state and its lines' counts
  // (domain/batch/state.ts); `open` (not ended) is what each server's batch runner looks after. A file's row is the
  // file as long as it exists (a deleted one has none). A waiting request's `lane` is its dispatch lane
  // (domain/batch/lines.ts: its account's own, or its account's batch lane for a batch's line), null once it waits no
  // more: the dispatch index is by lane, so a batch's thousands of lines never stand before its account's own
  // requests. Requests waiting before lanes existed are in their account's lane.
  `
  ALTER TABLE requests ADD COLUMN lane text COLLATE "C";
  UPDATE requests SET lane = account_id WHERE status = 'waiting';
  DROP INDEX requests_dispatch;
  CREATE INDEX requests_dispatch ON requests (lane, available_at, req_id) WHERE status = 'waiting';

  CREATE TABLE batches (
    batch_id text COLLATE "C" PRIMARY KEY,
    account_id text COLLATE "C" NOT NULL,
    created_at bigint NOT NULL,
    open boolean NOT NULL,
    state json NOT NULL
  );
  CREATE INDEX batches_by_account ON batches (account_id, created_at, batch_id);
  CREATE INDEX batches_open ON batches (batch_id) WHERE open;

  CREATE TABLE files (
    file_id text COLLATE "C" PRIMARY KEY,
    account_id text COLLATE "C" NOT NULL,
    created_at bigint NOT NULL,
    purpose text COLLATE "C" NOT NULL,
    state json NOT NULL
  );
  CREATE INDEX files_by_account ON files (account_id, created_at, file_id);
  `,
  // 5: each account's counters (domain/accountCounters.ts names them: the names below must stay the same as its),
  // changed in the same transaction as the events that change them: its batches not ended (what a plan's
  // maxBatchesInProgress bounds) and the bytes of its files that exist (maxFileStorageBytes). Counted here once for
  // what was stored before.
  `
  CREATE TABLE account_counts (
    counter text COLLATE "C" PRIMARY KEY,
    count bigint NOT NULL
  );
  INSERT INTO account_counts (counter, count)
    SELECT 'batches' || chr(31) || account_id, count(*) FROM batches WHERE open GROUP BY account_id
    UNION ALL
    SELECT 'fileBytes' || chr(31) || account_id, sum((state->>'bytes')::bigint) FROM files GROUP BY account_id
    HAVING sum((state->>'bytes')::bigint) <> 0;
  `,
  // 6: webhook endpoints and deliveries (issue 30). An endpoint's row is kept once removed (its deliveries must know it
  // is gone); `listed` (not removed) is what its account's list is over. A delivery's `due_at` is when it may next be
  // attempted while it waits or is being sent (projection.ts, webhookDueKeyOf), null once it is settled: the due
  // index is by endpoint first, so each endpoint's earliest is found by one seek.
  `
  CREATE TABLE webhook_endpoints (
    endpoint_id text COLLATE "C" PRIMARY KEY,
    account_id text COLLATE "C" NOT NULL,
    created_at bigint NOT NULL,
    listed boolean NOT NULL,
    state json NOT NULL
  );
  CREATE INDEX webhook_endpoints_by_account ON webhook_endpoints (account_id, created_at, endpoint_id) WHERE listed;

  CREATE TABLE webhook_deliveries (
    delivery_id text COLLATE "C" PRIMARY KEY,
    endpoint_id text COLLATE "C" NOT NULL,
    created_at bigint NOT NULL,
    due_at bigint,
    state json NOT NULL
  );
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint_id, due_at, delivery_id)
    WHERE due_at IS NOT NULL;
  CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, created_at, delivery_id);
  `,
  // 7: the open batches by account (each server's batch runner takes the accounts in turn, a bounded number a tick,
  // where it read the 1,000 oldest) and by the file they read (whether a file's bytes may go is one lookup, where every
  // open batch was read). A batch's input file is set from its view for what was stored before.
  `
  ALTER TABLE batches ADD COLUMN input_file_id text COLLATE "C";
  UPDATE batches SET input_file_id = state->'state'->'context'->>'inputFileId';
  ALTER TABLE batches ALTER COLUMN input_file_id SET NOT NULL;
  DROP INDEX batches_open;
  CREATE INDEX batches_open ON batches (account_id, batch_id) WHERE open;
  CREATE INDEX batches_open_inputs ON batches (input_file_id) WHERE open;
  `,
  // 8: files bounded per account (issue 40). Each account's files counted (domain/accountCounters.ts names the counter:
  // the name below must stay the same as its), for a plan's maxFiles, once for what was stored before; an account's
  // uploads whose reservation has not ended (domain/file/uploads.ts), one row per account with uploads streaming; and
  // an index by purpose, so that a list of an account's files of one purpose reads only the rows it returns.
  `
  INSERT INTO account_counts (counter, count)
    SELECT 'files' || chr(31) || account_id, count(*) FROM files GROUP BY account_id;
  CREATE TABLE file_uploads (
    account_id text COLLATE "C" PRIMARY KEY,
    uploads json NOT NULL
  );
  CREATE INDEX files_by_purpose ON files (account_id, purpose, created_at, file_id);
  `,
  // 9: a batch counts its lines' answers (domain/batch/state.ts: `answerChars`, and `keptAnswerChars` until each
  // line's request expires), and they count in the account's stored bytes (domain/accountCounters.ts, issue 40):
  // counted here once for what was stored before, from the request rows (a line that completed has `completedAt`),
  // then every account's stored bytes counted again from its files and its batches (twice an open batch's answers:
  // kept, and the room of its output file to come), and its batch lines queued and not ended.
  `
  WITH answers AS (
    SELECT state->'context'->>'batchId' AS batch_id,
      sum((state->'context'->>'responseChars')::bigint) AS answer_chars,
      coalesce(sum((state->'context'->>'responseChars')::bigint) FILTER (WHERE status = 'completed'), 0) AS kept
    FROM requests
    WHERE state->'context'->>'batchId' IS NOT NULL AND state->'context'->>'completedAt' IS NOT NULL
    GROUP BY 1
  )
  UPDATE batches b SET state = jsonb_set(
      jsonb_set(b.state::jsonb, '{counts,answerChars}', to_jsonb(coalesce(a.answer_chars, 0))),
      '{counts,keptAnswerChars}', to_jsonb(coalesce(a.kept, 0)))::json
    FROM batches b2 LEFT JOIN answers a ON a.batch_id = b2.batch_id COLLATE "C"
    WHERE b.batch_id = b2.batch_id;
  DELETE FROM account_counts WHERE left(counter, 10) = 'fileBytes' || chr(31);
  INSERT INTO account_counts (counter, count)
    SELECT 'fileBytes' || chr(31) || account_id, sum(n) FROM (
      SELECT account_id, (state->>'bytes')::bigint AS n FROM files
      UNION ALL
      SELECT account_id, (state->'counts'->>'keptAnswerChars')::bigint
        + CASE WHEN open THEN (state->'counts'->>'answerChars')::bigint ELSE 0 END FROM batches
    ) kept GROUP BY account_id HAVING sum(n) <> 0;
  DELETE FROM account_counts WHERE left(counter, 11) = 'linesAhead' || chr(31);
  INSERT INTO account_counts (counter, count)
    SELECT 'linesAhead' || chr(31) || account_id, sum((state->'counts'->>'queued')::bigint
      - (state->'counts'->>'completed')::bigint - (state->'counts'->>'failed')::bigint)
    FROM batches GROUP BY account_id
    HAVING sum((state->'counts'->>'queued')::bigint
      - (state->'counts'->>'completed')::bigint - (state->'counts'->>'failed')::bigint) <> 0;
  `,
  // 10: an account's queued count counts only its interactive requests (domain/queuedCounter.ts, issue 41): counted
  // again from the request rows, since a line counted before would never be taken off when it ends.
  `
  DELETE FROM queued_counts;
  INSERT INTO queued_counts (account_id, count)
    SELECT account_id, count(*) FROM requests
    WHERE status IN ('waiting', 'processing') AND state->'context'->>'batchId' IS NULL
    GROUP BY account_id;
  `,
  // 11 (issue 42): each account's token buckets (domain/tokens/tokenUse.ts): the tokens of its requests that ended in
  // each of the last 60 seconds, this UTC day and this calendar month; what its token limits are read against. Empty
  // at first: budgets count from the first request that ends after.
  `
  CREATE TABLE IF NOT EXISTS token_use (
    account_id text NOT NULL,
    kind text NOT NULL,
    start bigint NOT NULL,
    tokens bigint NOT NULL,
    PRIMARY KEY (account_id, kind, start)
  );
  `,
  // 12: the hourly usage view (issue 42, the usage API), counted whole from the request rows (hourlyUsage.ts).
  hourlyUsageMigration,
  // 13: an account's requests by kind (the dashboard's Requests filter, issue 42): whether a request is a batch's line
  // (`batch_line`, set from its state on every write: `requestColumns`), and its interactive requests and its batches'
  // lines each in a partial index of their own, so a page of one kind reads only the rows it shows. Rows written
  // before are marked by their state's text (a key `"batchId"` appears unescaped only as a key), without parsing JSON
  // a NUL character would stop. Written to run again over itself (IF NOT EXISTS).
  `
  ALTER TABLE requests ADD COLUMN IF NOT EXISTS batch_line boolean NOT NULL DEFAULT false;
  UPDATE requests SET batch_line = true WHERE NOT batch_line AND state::text LIKE '%"batchId":"%';
  CREATE INDEX IF NOT EXISTS requests_interactive_by_account ON requests (account_id, created_at, req_id)
    WHERE expires_at IS NOT NULL AND NOT batch_line;
  CREATE INDEX IF NOT EXISTS requests_lines_by_account ON requests (account_id, created_at, req_id)
    WHERE expires_at IS NOT NULL AND batch_line;
  `,
];

/** The schema version this code writes and reads. */
export const schemaVersion = migrations.length;

/**
 * Brings the database's schema to `schemaVersion` (from nothing, or from an older version), under an advisory lock
 * held for the transaction, or refuses a database of a newer version with one line.
 */
export const migrate = async (db: Db, where: string): Promise<void> => {
  await db.begin((query) => migrateIn(query, where));
};

/** `migrate` inside a transaction the caller holds (airs migrate: the schema and the copy commit together). */
export const migrateIn = async (query: Query, where: string): Promise<void> => {
  await query(sql`SELECT pg_advisory_xact_lock(${lockSpace.schema}::int, 0)`);
  await query(
    sql`CREATE TABLE IF NOT EXISTS airs_schema_version (id smallint PRIMARY KEY CHECK (id = 1), version integer NOT NULL)`,
  );
  const [row] = await query<{ version: number }[]>(sql`SELECT version FROM airs_schema_version WHERE id = 1`);
  const found = row?.version ?? 0;
  if (found > schemaVersion) {
    throw new Error(
      `the database ${where} holds airs schema version ${found}, newer than this airs knows (${schemaVersion}): run a newer airs on it`,
    );
  }
  for (let version = found + 1; version <= schemaVersion; version++) {
    await query({ text: migrations[version - 1] as string, values: [] });
  }
  if (found < schemaVersion) {
    await query(sql`INSERT INTO airs_schema_version (id, version) VALUES (1, ${schemaVersion})
      ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version`);
  }
};
