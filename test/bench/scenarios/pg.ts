/**
 * airs on PostgreSQL (issue 22), in one run, on a throwaway PostgreSQL cluster the bench starts (test/bench/postgres.ts:
 * `synchronous_commit = on`, `fsync = on`), pinned with the systems under test:
 *
 * - end to end, airs (one node) against graphile-worker on the same cluster (a database each);
 * - POST and GET throughput and p99 of airs on PostgreSQL against airs on LMDB, and of two airs nodes on one
 *   database against one node, by the method of the HTTP scenarios (interleaved rounds, medians).
 *
 * airs's nodes, graphile-worker's worker and PostgreSQL (postmaster and every backend) share the server CPUs; the load
 * (autocannon, graphile-worker's producers) and the bench run on the load CPUs.
 */
import { openDb, sql } from '../../../src/adapters/postgres/db.js';
import {
  authHeaders,
  benchConfig,
  call,
  completedRequest,
  createAccountWithKey,
  type RunningAirs,
  type Sandbox,
  sandbox,
  startAirs,
} from '../airs.js';
import { type Context, profileFlags, type Row, type ScenarioResult } from '../context.js';
import { type LoadResult, type LoadSpec, runLoad } from '../load.js';
import { type BenchCluster, benchSettings, startBenchCluster } from '../postgres.js';
import { waitForIdleAll } from '../procfs.js';
import { ratio } from '../stats.js';
import { type EndToEndRun, type LogEntry, type LogFollower, timeEndToEnd } from './airsEndToEnd.js';
import { graphileEndToEnd, graphileSettings } from './graphileEndToEnd.js';
import { interleavedRounds, type RoundSide, summarize } from './http.js';

/** Issue 22's floor (the goal is 5 x). */
const minRatio = 2;
const goalRatio = 5;

/** A sandbox whose store is the database `url` (AIRS_DATABASE_URL; the data directory is not used). */
export const onDatabase = (box: Sandbox, url: string): Sandbox => ({
  ...box,
  env: { ...box.env, AIRS_DATABASE_URL: url },
});

/**
 * Follows an airs log in PostgreSQL: the new rows of `events`, a page per look, over one connection of its own
 * (airs's own connection code, src/adapters/postgres/db.ts: bigint columns come back as numbers).
 */
const postgresFollower = (url: string): LogFollower & { close(): Promise<void> } => {
  const db = openDb(url, 1);
  return {
    pauseMs: 100,
    lastSeq: async () =>
      Number(
        (await db.query<{ last_seq: number }[]>(sql`SELECT last_seq FROM log_head WHERE id = 1`))[0]?.last_seq ?? 0,
      ),
    read: async (fromSeq) => {
      const rows = await db.query<{ seq: number; type: string; at: string; req_id: string | null }[]>(sql`
        SELECT seq, payload->>'type' AS type, payload->>'at' AS at, payload->>'reqId' AS req_id
        FROM events WHERE seq >= ${fromSeq} ORDER BY seq LIMIT 50000`);
      return rows.map(
        (row): LogEntry => ({
          seq: Number(row.seq),
          type: row.type,
          at: Number(row.at),
          ...(row.req_id === null ? {} : { reqId: row.req_id }),
        }),
      );
    },
    close: () => db.end(),
  };
};

/** One airs node on PostgreSQL against graphile-worker, end to end. */
const endToEnd = async (context: Context, cluster: BenchCluster) => {
  const url = await cluster.createDatabase();
  // The default worker count (processing.concurrency unset): issue 28's target is met without raising it.
  const defaultWorkers = { ...benchConfig, processing: { maxBacklog: benchConfig.processing.maxBacklog } };
  const box = onDatabase(sandbox(context.workDir, 'pg-e2e-airs', defaultWorkers), url);
  const credentials = await createAccountWithKey(box);
  const airs = await startAirs(box, {
    cpus: context.cpus.server,
    nodeArgs: profileFlags(context, 'pg-e2e'),
    processes: context.options.processes,
  });
  const follower = postgresFollower(url);
  let airsRun: EndToEndRun;
  try {
    airsRun = await timeEndToEnd(context, { urls: [airs.url], key: credentials.key, follower, label: 'airs-pg' });
  } finally {
    await follower.close();
    await airs.child.stop('SIGTERM', 20_000);
  }
  context.log(
    `  airs-pg: ${airsRun.jobs} in ${airsRun.seconds} s (${airsRun.jobsPerSec}/s; submitting took ${airsRun.submitSeconds} s)`,
  );
  const graphile = await graphileEndToEnd(context, await cluster.createDatabase());
  context.log(
    `  graphile-worker: ${graphile.jobs} in ${graphile.seconds} s (${graphile.jobsPerSec}/s; adding took ${graphile.submitSeconds} s)`,
  );
  return { airs: airsRun, graphile };
};

type HttpKind = 'post' | 'get';
const sideNames = ['lmdb', 'pg', 'pg-2'] as const;
type SideName = (typeof sideNames)[number];

/**
 * POST or GET: airs on LMDB, one airs node on PostgreSQL, two airs nodes on the same database (the connections split
 * between them), interleaved. The second node runs only for its side's rounds (started before, stopped after), so
 * that it takes none of the one node's processing; before every round all airs processes and the cluster are idle.
 */
const httpRounds = async (
  context: Context,
  kind: HttpKind,
  servers: { lmdb: RunningAirs; pg: RunningAirs; startSecond: () => Promise<RunningAirs> },
  keys: { lmdb: string; pg: string },
  paths: { lmdb: string; pg: string },
  cluster: BenchCluster,
) => {
  const { sizes } = context.options;
  const body = JSON.stringify({ model: 'echo', prompt: 'hello' });
  const spec = (url: string, key: string, path: string, connections: number): LoadSpec => ({
    url,
    method: kind === 'post' ? 'POST' : 'GET',
    path,
    headers: authHeaders(key, kind === 'post'),
    ...(kind === 'post' ? { body } : {}),
    connections,
  });
  let second: RunningAirs | undefined;
  const airsPids = () => [
    servers.lmdb.child.pid,
    servers.pg.child.pid,
    ...(second === undefined ? [] : [second.child.pid]),
  ];
  const idleWaits: number[] = [];
  const settle = async () => {
    const waited = await waitForIdleAll(() => [...airsPids(), ...cluster.pids()], {
      timeoutMs: Math.max(30_000, sizes.http.roundSec * 20_000),
    });
    idleWaits.push(waited.waitedMs);
    if (!waited.idle) context.log(`  airs or PostgreSQL still busy after ${waited.waitedMs} ms; measuring anyway`);
  };
  const half = Math.floor(sizes.connections / 2);
  const lmdbSide: RoundSide<SideName> = {
    name: 'lmdb',
    specs: [spec(servers.lmdb.url, keys.lmdb, paths.lmdb, sizes.connections)],
  };
  const pgSide: RoundSide<SideName> = {
    name: 'pg',
    specs: [spec(servers.pg.url, keys.pg, paths.pg, sizes.connections)],
  };
  // The two-node side's specs are made when its second node has started (its URL is known then).
  const twoNodes = {
    name: 'pg-2' as const,
    get specs() {
      if (second === undefined) throw new Error('the second node is not running');
      return [
        spec(servers.pg.url, keys.pg, paths.pg, sizes.connections - half),
        spec(second.url, keys.pg, paths.pg, half),
      ];
    },
  };
  // The second node comes up just before the two-node side's turn (warmed by 1 s of the same load on it alone, when
  // the run has warm-ups) and goes right after it.
  const withSecond = async (run: () => Promise<void>) => {
    second = await servers.startSecond();
    try {
      if (sizes.http.warmupSec > 0)
        await runLoad({ ...spec(second.url, keys.pg, paths.pg, half), durationSec: 1 }, context.cpus.load);
      await run();
    } finally {
      await second.child.stop('SIGTERM', 20_000);
      second = undefined;
    }
  };
  const rounds = await interleavedRounds<SideName>(context, [lmdbSide, pgSide, twoNodes], settle, {
    around: (side, run) => (side.name === 'pg-2' ? withSecond(run) : run()),
  });
  await settle();
  return { rounds, idleWaits };
};

export const pgScenario = async (context: Context): Promise<ScenarioResult> => {
  const { sizes, smoke } = context.options;
  context.log('  starting a PostgreSQL cluster');
  const cluster = await startBenchCluster(context.cpus.server);
  context.log(`  PostgreSQL ${cluster.version} on port ${cluster.port}`);
  const notes: string[] = [];
  const rows: Row[] = [];
  const details: Record<string, unknown> = { postgres: { version: cluster.version, settings: benchSettings } };
  const servers: RunningAirs[] = [];
  try {
    // End to end.
    const e2e = await endToEnd(context, cluster);
    const speedup = ratio(e2e.graphile.seconds, e2e.airs.seconds);
    details.e2e = { ...e2e, speedup };
    rows.push({
      scenario: `End to end on PostgreSQL: ${sizes.e2e.requests} echo requests, ${sizes.e2e.clients} clients, until all completed`,
      target: `>= ${minRatio} x graphile-worker (goal ${goalRatio} x)`,
      measured: `${speedup.toFixed(2)} x`,
      detail: `airs (1 node) ${e2e.airs.seconds} s (${e2e.airs.jobsPerSec}/s), graphile-worker ${e2e.graphile.seconds} s (${e2e.graphile.jobsPerSec}/s)`,
      met: smoke ? null : speedup >= minRatio,
    });
    const g = graphileSettings(sizes.e2e.bullConcurrency);
    notes.push(
      `pg: PostgreSQL ${cluster.version}, a throwaway cluster started by the bench (${Object.entries(benchSettings)
        .map(([name, value]) => `${name}=${value}`)
        .join(', ')}; other settings default), on the server CPUs with the system under test.`,
      `pg end to end: airs serve with AIRS_DATABASE_URL and the default processing.concurrency (its connections set synchronous_commit=on themselves), completion read from its events table; graphile-worker 0.17.3 in its own database: ${sizes.e2e.clients} producers awaiting addJob through a pool of ${sizes.e2e.clients} connections, one worker (concurrency ${g.concurrency}, localQueue ${g.localQueue}, pool ${g.maxPoolSize}, quiet logger, echo task), time until the last completion was committed (no job row left); warm-up ${sizes.e2e.warmup} each.`,
    );

    // POST and GET: LMDB, one PostgreSQL node, two.
    const lmdbBox = sandbox(context.workDir, 'pg-http-lmdb');
    const pgUrl = await cluster.createDatabase();
    const pgBox = onDatabase(sandbox(context.workDir, 'pg-http-pg'), pgUrl);
    const lmdbKey = (await createAccountWithKey(lmdbBox)).key;
    const pgKey = (await createAccountWithKey(pgBox)).key;
    const lmdb = await startAirs(lmdbBox, { cpus: context.cpus.server, processes: context.options.processes });
    servers.push(lmdb);
    const pg = await startAirs(pgBox, {
      cpus: context.cpus.server,
      nodeArgs: profileFlags(context, 'pg-http'),
      processes: context.options.processes,
    });
    servers.push(pg);
    const startSecond = () => startAirs(pgBox, { cpus: context.cpus.server, processes: context.options.processes });
    const http: Record<string, unknown> = {};
    for (const kind of ['post', 'get'] as const) {
      context.log(`  ${kind.toUpperCase()}: airs on LMDB, airs on PostgreSQL (1 node, 2 nodes)`);
      let paths = { lmdb: '/v1/ai', pg: '/v1/ai' };
      if (kind === 'get') {
        const lmdbReq = await completedRequest(lmdb.url, lmdbKey);
        const pgReq = await completedRequest(pg.url, pgKey);
        paths = {
          lmdb: `/v1/ai?req_id=${encodeURIComponent(lmdbReq)}`,
          pg: `/v1/ai?req_id=${encodeURIComponent(pgReq)}`,
        };
      } else {
        for (const [url, key] of [
          [lmdb.url, lmdbKey],
          [pg.url, pgKey],
        ] as const) {
          const first = await call(url, 'POST', '/v1/ai', key, { model: 'echo', prompt: 'hello' });
          if (first.status !== 202)
            throw new Error(`POST /v1/ai answered ${first.status}: ${JSON.stringify(first.body)}`);
        }
      }
      const { rounds, idleWaits } = await httpRounds(
        context,
        kind,
        { lmdb, pg, startSecond },
        { lmdb: lmdbKey, pg: pgKey },
        paths,
        cluster,
      );
      const s = Object.fromEntries(sideNames.map((name) => [name, summarize(rounds[name])])) as Record<
        SideName,
        ReturnType<typeof summarize>
      >;
      const clean = sideNames.every((name) => s[name].non2xx === 0 && s[name].errors === 0);
      const label = kind === 'post' ? 'POST /v1/ai (durable 202)' : 'GET /v1/ai (completed request)';
      const pgVsLmdb = ratio(s.pg.rps, s.lmdb.rps);
      const twoVsOne = ratio(s['pg-2'].rps, s.pg.rps);
      rows.push(
        {
          scenario: `${label} on PostgreSQL (1 node): throughput, p99`,
          target: 'reported (vs LMDB)',
          measured: `${pgVsLmdb.toFixed(2)} x LMDB`,
          detail: `PostgreSQL ${s.pg.rps} req/s p99 ${s.pg.p99Ms} ms (p50 ${s.pg.p50Ms}); LMDB ${s.lmdb.rps} req/s p99 ${s.lmdb.p99Ms} ms (p50 ${s.lmdb.p50Ms})`,
          met: null,
        },
        {
          scenario: `${label} on PostgreSQL: 2 nodes vs 1`,
          target: 'reported',
          measured: `${twoVsOne.toFixed(2)} x`,
          detail: `2 nodes ${s['pg-2'].rps} req/s p99 ${s['pg-2'].p99Ms} ms; 1 node ${s.pg.rps} req/s p99 ${s.pg.p99Ms} ms`,
          met: null,
        },
      );
      const per = (name: SideName) => rounds[name].map((r: LoadResult) => Math.round(r.rps)).join(', ');
      notes.push(
        `pg ${kind.toUpperCase()}: ${sizes.connections} connections (2 nodes: split evenly, the second node started before each of its turns, warmed by 1 s of load alone when the run has warm-ups, and stopped after), ${sizes.http.rounds} round(s) of ${sizes.http.roundSec} s per side${sizes.http.warmupSec > 0 ? ` after a ${sizes.http.warmupSec} s warm-up each` : ''}, interleaved LMDB / PostgreSQL 1 node / 2 nodes; req/s per round: LMDB ${per('lmdb')}; PG ${per('pg')}; PG 2 nodes ${per('pg-2')}; p99 of 2 nodes: the worse node's.`,
        ...(clean ? [] : [`pg ${kind.toUpperCase()}: non-2xx answers or errors: the figures are not valid.`]),
      );
      http[kind] = { ...s, pgVsLmdb, twoVsOne, rounds, idleWaitsMs: idleWaits };
    }
    details.http = http;
    return { name: 'pg', rows, notes, details };
  } finally {
    await Promise.all(servers.map((server) => server.child.stop('SIGTERM', 20_000)));
    await cluster.stop();
  }
};
