/**
 * `postgres` (postgres.js) against `pg` (node-postgres) on the PostgreSQL store's workload shape (issue 22: which
 * client, and why). A throwaway cluster (test/support/postgres.ts), small tables shaped like the store's (schema.ts),
 * and three workloads, each client with a pool of 8 connections:
 *
 * - batch: 8 writers, each committing batch transactions of 50 submits, one at a time across all writers (the log's
 *   advisory lock), as batch.ts does: BEGIN; the lock, the head and four prefetch SELECTs; then the INSERTs/UPSERTs
 *   with array parameters (unnest), the head's UPDATE and pg_notify; COMMIT with synchronous_commit = on.
 * - reads: 64 concurrent callers, each a loop of one-row SELECTs by primary key (polls).
 * - spend: 64 concurrent callers, each a loop of the limiter's short transaction (SET LOCAL synchronous_commit = off,
 *   the key's advisory lock, its row, the upsert), as PostgresStore.spend does.
 *
 * The clients run the same SQL text with the same parameters. `postgres` sends a transaction's statements that are
 * issued without awaiting each in one write (pipelined), as the store does (in `sql.begin`). `pg` is measured as it
 * is usually used (each statement awaited before the next: its default client sends one at a time and warns that
 * queueing a second is deprecated) and with its `pipeline: true` client option (newer 8.x), issuing the same groups
 * of statements together. `pg` uses named (prepared) statements too, as `postgres` prepares by default, so what
 * differs is the round trips and the drivers' own costs.
 *
 * Each workload and client runs `--seconds` (3) at a time, three rounds interleaved (the order rotated each round);
 * medians are printed, with each round's figure. The machine's load average is printed before and after: compare
 * the clients within one run. Run: `npm run build && node dist/test/bench/pgClients.js [--seconds 3] [--callers 64]
 * [--only batch,reads,spend]`.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import pg from 'pg';
import postgres from 'postgres';
import { stopTestCluster, testCluster } from '../support/postgres.js';

type Row = Record<string, unknown>;
/** A bytea[] parameter: postgres.js must be told the element type (as batch.ts does, `tx.array(..., 17)`); pg writes
 * an array of Buffers as a bytea[] literal by itself. */
class ByteaArray {
  constructor(readonly items: readonly (Buffer | null)[]) {}
}
/** Sends one statement; its promise is the statement's rows. */
type Send = (text: string, values?: readonly unknown[]) => Promise<Row[]>;
/** Whether statements of one transaction may be issued without awaiting each (sent together when they may). */
type Tx = { readonly send: Send; readonly pipelined: boolean };

type Client = {
  readonly name: string;
  /** BEGIN, `fn`, COMMIT (ROLLBACK when it throws) on one connection of the pool. */
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /** One statement on any connection of the pool. */
  query: Send;
  end(): Promise<void>;
};

/** The installed version of a package (dist/test/bench/ is three folders below the project). */
const versionOf = (name: string) =>
  (
    JSON.parse(readFileSync(new URL(`../../../node_modules/${name}/package.json`, import.meta.url), 'utf8')) as {
      version: string;
    }
  ).version;
const postgresVersion = versionOf('postgres');
const pgVersion = versionOf('pg');

const poolSize = 8;
const argv = process.argv.slice(2);
const option = (name: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const seconds = Number(option('--seconds') ?? 3) || 3;
/** Only these workloads (comma-separated), for a closer look at one. */
const only = option('--only')?.split(',');
const rounds = 3;
const batchSize = 50;
const writers = 8;
const callers = Number(option('--callers') ?? 64) || 64;
const accounts = 1_000;
const seededRequests = 20_000;
const logLock = 0x41495254;
const limiterLock = 0x41495255;

const postgresClient = (url: string): Client => {
  const sql = postgres(url, {
    max: poolSize,
    onnotice: () => {},
    types: {
      bigint: { to: 20, from: [20], serialize: (v: number) => String(v), parse: (v: string) => Number(v) },
    },
    connection: { synchronous_commit: 'on', application_name: 'airs-bench' },
  });
  // `unsafe` with the same $n text as `pg`, prepared (a named statement, cached per connection) as the store's tagged
  // templates are by default (`unsafe` alone is not: each statement with parameters would then wait for its own
  // Parse/Describe round trip before its Bind, and nothing would pipeline), and `.execute()` sends it now, so
  // statements go out in the order issued.
  const on =
    (s: postgres.Sql): Send =>
    (text, values = []) =>
      s
        .unsafe(text, values.map((v) => (v instanceof ByteaArray ? s.array(v.items as Buffer[], 17) : v)) as never[], {
          prepare: true,
        })
        .execute() as unknown as Promise<Row[]>;
  return {
    name: `postgres ${postgresVersion}`,
    transaction: (fn) =>
      sql.begin((tx) => fn({ send: on(tx as unknown as postgres.Sql), pipelined: true })) as Promise<never>,
    query: on(sql),
    end: () => sql.end({ timeout: 5 }),
  };
};

const statementNames = new Map<string, string>();
const nameOf = (text: string) => {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `s${createHash('sha1').update(text).digest('hex').slice(0, 12)}`;
    statementNames.set(text, name);
  }
  return name;
};

const pgClient = (url: string, pipeline: boolean): Client => {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    options: '-c synchronous_commit=on',
    application_name: 'airs-bench',
    pipeline,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === 20 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)) as never,
    },
  } as pg.PoolConfig & { pipeline: boolean });
  // Parameterised statements as named (prepared) ones; the others in the simple protocol, as postgres.js does.
  const on =
    (c: pg.Pool | pg.PoolClient): Send =>
    async (text, values = []) =>
      (
        await (values.length === 0
          ? c.query(text)
          : c.query({ name: nameOf(text), text, values: values.map((v) => (v instanceof ByteaArray ? v.items : v)) }))
      ).rows as Row[];
  return {
    name: pipeline ? `pg ${pgVersion} (pipeline: true)` : `pg ${pgVersion}`,
    transaction: async (fn) => {
      const client = await pool.connect();
      const send = on(client);
      try {
        await send('BEGIN');
        const result = await fn({ send, pipelined: pipeline });
        await send('COMMIT');
        return result;
      } catch (error) {
        await send('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
    query: on(pool),
    end: () => pool.end(),
  };
};

/** Runs the thunks together when the transaction may pipeline, else one after another (each awaited). */
const group = async (tx: Tx, thunks: readonly (() => Promise<Row[]>)[]): Promise<Row[][]> => {
  if (tx.pipelined) return Promise.all(thunks.map((thunk) => thunk()));
  const results: Row[][] = [];
  for (const thunk of thunks) results.push(await thunk());
  return results;
};

const schema = `
  CREATE TABLE log_head (id smallint PRIMARY KEY CHECK (id = 1), last_seq bigint NOT NULL, accounts_version bigint NOT NULL);
  INSERT INTO log_head VALUES (1, 0, 0);
  CREATE TABLE events (seq bigint PRIMARY KEY, payload json NOT NULL);
  CREATE TABLE requests (
    req_id text COLLATE "C" PRIMARY KEY, account_id text COLLATE "C" NOT NULL, status text NOT NULL,
    model text COLLATE "C" NOT NULL, created_at bigint NOT NULL, available_at bigint NOT NULL, expires_at bigint,
    lease_until bigint, state json NOT NULL, text bytea);
  ALTER TABLE requests ALTER COLUMN text SET STORAGE EXTERNAL;
  CREATE INDEX requests_dispatch ON requests (account_id, available_at, req_id) WHERE status = 'waiting';
  CREATE INDEX requests_by_account ON requests (account_id, created_at, req_id) WHERE expires_at IS NOT NULL;
  CREATE INDEX requests_expiry ON requests (expires_at, req_id) WHERE expires_at IS NOT NULL;
  CREATE INDEX requests_processing ON requests (lease_until, req_id) WHERE lease_until IS NOT NULL;
  CREATE TABLE accounts (account_id text COLLATE "C" PRIMARY KEY, state json NOT NULL);
  CREATE TABLE queued_counts (account_id text COLLATE "C" PRIMARY KEY, count bigint NOT NULL);
  CREATE TABLE limiter (account_id text COLLATE "C" NOT NULL, budget text COLLATE "C" NOT NULL,
    tat double precision NOT NULL, PRIMARY KEY (account_id, budget));
  INSERT INTO accounts SELECT 'acct_' || i, json_build_object('accountId', 'acct_' || i, 'plan', 'pro', 'status', 'active')
    FROM generate_series(0, ${accounts - 1}) i;
  INSERT INTO requests
    SELECT 'seed_' || i, 'acct_' || (i % ${accounts}), 'completed', 'gpt-4o-mini', 1e12::bigint + i, 1e12::bigint + i,
      2e12::bigint + i, NULL,
      json_build_object('status', 'completed', 'context', json_build_object('reqId', 'seed_' || i,
        'accountId', 'acct_' || (i % ${accounts}), 'model', 'gpt-4o-mini', 'createdAt', 1e12::bigint + i),
        'usage', json_build_object('input', 12, 'output', 140)),
      convert_to(repeat('the answer ', 40), 'UTF8')
    FROM generate_series(0, ${seededRequests - 1}) i;
  ANALYZE;
`;

const prompt = Buffer.from('Summarise the following text in three sentences: '.repeat(4), 'utf8');
let submitted = 0;

/** One batch of `batchSize` submits, shaped as batch.ts commits it. */
const batch = (tx: Tx) => async (): Promise<number> => {
  const now = Date.now();
  const ids = Array.from({ length: batchSize }, () => `req_${process.pid}_${++submitted}`);
  const owners = ids.map((_, i) => `acct_${(submitted + i * 7) % accounts}`);
  const uniqueOwners = [...new Set(owners)];
  const [, heads] = await group(tx, [
    () => tx.send('SELECT pg_advisory_xact_lock($1::int, 1)', [logLock]),
    () => tx.send('SELECT last_seq FROM log_head WHERE id = 1', []),
    () => tx.send('SELECT req_id AS id, state AS value FROM requests WHERE req_id = ANY($1::text[])', [ids]),
    () =>
      tx.send('SELECT account_id AS id, state AS value FROM accounts WHERE account_id = ANY($1::text[])', [
        uniqueOwners,
      ]),
    () =>
      tx.send('SELECT account_id AS id, count FROM queued_counts WHERE account_id = ANY($1::text[])', [uniqueOwners]),
    () => tx.send(`SELECT EXISTS (SELECT 1 FROM requests WHERE status = 'waiting') AS any`, []),
  ]);
  const from = Number(heads?.[0]?.last_seq);
  const states = ids.map((reqId, i) =>
    JSON.stringify({
      status: 'waiting',
      context: { reqId, accountId: owners[i], model: 'gpt-4o-mini', createdAt: now },
    }),
  );
  const events = ids.map((reqId, i) =>
    JSON.stringify({
      seq: from + 1 + i,
      at: now,
      type: 'Submitted',
      reqId,
      accountId: owners[i],
      model: 'gpt-4o-mini',
    }),
  );
  const deltas = new Map<string, number>();
  for (const owner of owners) deltas.set(owner, (deltas.get(owner) ?? 0) + 1);
  const last = from + batchSize;
  await group(tx, [
    () =>
      tx.send('INSERT INTO events (seq, payload) SELECT * FROM unnest($1::bigint[], $2::text[]::json[])', [
        ids.map((_, i) => from + 1 + i),
        events,
      ]),
    () =>
      tx.send(
        `INSERT INTO requests (req_id, account_id, status, model, created_at, available_at, expires_at, lease_until, state, text)
         SELECT u.req_id, u.account_id, u.status, u.model, u.created_at, u.available_at, u.expires_at, u.lease_until,
           u.state::json, u.text
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[],
           $8::bigint[], $9::text[], $10::bytea[])
           AS u(req_id, account_id, status, model, created_at, available_at, expires_at, lease_until, state, text)`,
        [
          ids,
          owners,
          ids.map(() => 'waiting'),
          ids.map(() => 'gpt-4o-mini'),
          ids.map(() => now),
          ids.map(() => now),
          ids.map(() => now + 86_400_000),
          ids.map(() => null),
          states,
          new ByteaArray(ids.map(() => prompt)),
        ],
      ),
    () =>
      tx.send(
        `WITH added AS (
           INSERT INTO queued_counts (account_id, count) SELECT * FROM unnest($1::text[], $2::bigint[])
           ON CONFLICT (account_id) DO UPDATE SET count = queued_counts.count + EXCLUDED.count
           RETURNING account_id, count)
         DELETE FROM queued_counts t USING added a WHERE t.account_id = a.account_id AND a.count = 0`,
        [[...deltas.keys()], [...deltas.values()]],
      ),
    () =>
      tx.send('UPDATE log_head SET last_seq = $1, accounts_version = accounts_version + $2 WHERE id = 1', [last, 0]),
    () => tx.send('SELECT pg_notify($1, $2)', ['airs_changes', String(last)]),
  ]);
  return batchSize;
};

/** The limiter's short transaction for one (account, budget), as PostgresStore.spend. */
const spend = (tx: Tx) => async (): Promise<number> => {
  const accountId = `acct_${Math.floor(Math.random() * accounts)}`;
  const budget = 'polls';
  const [, , rows] = await group(tx, [
    () => tx.send('SET LOCAL synchronous_commit = off', []),
    () =>
      tx.send(
        `SELECT pg_advisory_xact_lock($1::int, h)
         FROM (SELECT DISTINCT hashtext(k) AS h FROM unnest($2::text[]) AS k ORDER BY h) AS locks`,
        [limiterLock, [JSON.stringify([accountId, budget])]],
      ),
    () =>
      tx.send(
        `SELECT l.account_id, l.budget, l.tat FROM limiter l
         JOIN unnest($1::text[], $2::text[]) AS u(account_id, budget)
           ON l.account_id = u.account_id AND l.budget = u.budget`,
        [[accountId], [budget]],
      ),
  ]);
  const now = Date.now();
  const tat = Math.max(Number((rows as Row[])[0]?.tat ?? now), now) + 50;
  await tx.send(
    `INSERT INTO limiter (account_id, budget, tat)
     SELECT * FROM unnest($1::text[], $2::text[], $3::float8[])
     ON CONFLICT (account_id, budget) DO UPDATE SET tat = EXCLUDED.tat`,
    [[accountId], [budget], [tat]],
  );
  return 1;
};

type Measured = { perSecond: number; itemsPerSecond: number; p50: number; p99: number };

/** `concurrency` loops of `op` for `ms`; each op's latency in ms, and how many items (events) it carried. */
const measure = async (ms: number, concurrency: number, op: () => Promise<number>): Promise<Measured> => {
  const latencies: number[] = [];
  let items = 0;
  const started = performance.now();
  const end = started + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        const carried = await op();
        items += carried;
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN;
  return { perSecond: latencies.length / elapsed, itemsPerSecond: items / elapsed, p50: at(0.5), p99: at(0.99) };
};

const allWorkloads: Record<string, (client: Client, ms: number) => Promise<Measured>> = {
  batch: (client, ms) => measure(ms, writers, () => client.transaction((tx) => batch(tx)())),
  reads: (client, ms) =>
    measure(ms, callers, async () => {
      const rows = await client.query('SELECT state AS value FROM requests WHERE req_id = $1', [
        `seed_${Math.floor(Math.random() * seededRequests)}`,
      ]);
      if (rows.length !== 1) throw new Error('a seeded request was not found');
      return 1;
    }),
  spend: (client, ms) => measure(ms, callers, () => client.transaction((tx) => spend(tx)())),
};

const workloads = Object.fromEntries(
  Object.entries(allWorkloads).filter(([name]) => only === undefined || only.includes(name)),
);

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};

const main = async () => {
  const load = () =>
    loadavg()
      .map((x) => x.toFixed(2))
      .join(' ');
  const loadBefore = load();
  const cluster = await testCluster();
  const url = await cluster.createDatabase();
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  await admin.unsafe(schema);
  const [{ server_version: serverVersion } = { server_version: '?' }] = await admin<
    { server_version: string }[]
  >`SHOW server_version`;
  const clients = [postgresClient(url), pgClient(url, false), pgClient(url, true)];
  for (const client of clients) {
    const [row] = await client.query("SELECT current_setting('synchronous_commit') AS value", []);
    if (row?.value !== 'on') throw new Error(`${client.name}: synchronous_commit is ${String(row?.value)}, not on`);
  }
  console.log(
    `PostgreSQL ${serverVersion}, node ${process.version}, pool ${poolSize} each, ${seconds} s a run, ${rounds} rounds; load average before: ${loadBefore}`,
  );
  // Warm-up: connections opened, statements prepared, the JIT warm.
  for (const run of Object.values(workloads)) for (const client of clients) await run(client, 400);

  const results = new Map<string, Measured[]>();
  for (let round = 0; round < rounds; round++) {
    const order = clients.map((_, i) => clients[(i + round) % clients.length] as Client);
    for (const [workload, run] of Object.entries(workloads)) {
      for (const client of order) {
        const result = await run(client, seconds * 1000);
        const key = `${workload}\u0000${client.name}`;
        results.set(key, [...(results.get(key) ?? []), result]);
        console.log(
          `round ${round + 1} ${workload.padEnd(5)} ${client.name.padEnd(28)} ${result.perSecond.toFixed(0).padStart(7)}/s  p50 ${result.p50.toFixed(2)} ms  p99 ${result.p99.toFixed(2)} ms`,
        );
      }
    }
  }
  // The log is still gap-free: every batch took its numbers after the last committed one, under the lock.
  const [check] = await admin<{ count: number; max: number; last: number }[]>`
    SELECT count(*)::int AS count, coalesce(max(seq), 0)::int AS max, (SELECT last_seq::int FROM log_head) AS last FROM events`;
  if (check === undefined || check.count !== check.max || check.max !== check.last)
    throw new Error(`events are not gap-free: ${JSON.stringify(check)}`);

  const loadAfter = load();
  const row = (workload: string, client: Client, cells: (m: Measured[]) => string[]) =>
    `| ${workload} | ${client.name} | ${cells(results.get(`${workload}\u0000${client.name}`) ?? []).join(' | ')} |`;
  const fmt = (values: number[], digits = 0) => median(values).toFixed(digits);
  const lines = [
    '',
    `| workload | client | per second (median of ${rounds}) | events/s | p50 ms | p99 ms | runs (per second) |`,
    '|---|---|--:|--:|--:|--:|---|',
  ];
  for (const workload of Object.keys(workloads))
    for (const client of clients)
      lines.push(
        row(workload, client, (m) => [
          fmt(m.map((x) => x.perSecond)),
          workload === 'batch' ? fmt(m.map((x) => x.itemsPerSecond)) : '',
          fmt(
            m.map((x) => x.p50),
            2,
          ),
          fmt(
            m.map((x) => x.p99),
            2,
          ),
          m.map((x) => x.perSecond.toFixed(0)).join(', '),
        ]),
      );
  lines.push('', `${check.max} events, gap-free. Load average before: ${loadBefore}; after: ${loadAfter}.`);
  console.log(lines.join('\n'));
  await Promise.all(clients.map((client) => client.end()));
  await admin.end({ timeout: 5 });
  await stopTestCluster();
};

await main();
