import pg from 'pg';
import { afterAll, beforeAll, expect } from 'vitest';
import { type Cluster, clusterJson } from '../multiServer/clusterTarget.js';
import { type CountingUpstream, startCountingUpstream } from '../multiServer/countingUpstream.js';
import { readLog, verifyLog } from '../multiServer/theLog.js';
import { stopTestCluster, type TestCluster, testCluster } from '../support/postgres.js';
import {
  killChildren,
  runCli,
  type Sandbox,
  type ServerProcess,
  sandbox,
  sleep,
  startServer,
} from '../support/processes.js';

/*
 * What the fault tests of a PostgreSQL store share (issue 22): `airs serve` nodes on one new database of the tests'
 * throwaway cluster, a counting upstream as the model, bursts of submits that record every answer, and checks that
 * every acknowledged request is in the log and completed exactly once.
 */

/** The file's hooks: the tests' cluster started before its tests, and its servers and the cluster stopped after. */
export const useTestCluster = () => {
  beforeAll(() => testCluster().then(() => {}), 120_000);
  afterAll(async () => {
    await killChildren();
    await stopTestCluster();
  }, 60_000);
};

/** Limits far above what the tests send: an answer other than 202 or 503 is then a fault of the store. */
export const unlimited = { submitsPerMinute: 1_000_000, pollsPerMinute: 1_000_000, maxQueued: 1_000_000 };

export type Nodes = Cluster & {
  readonly postgres: TestCluster;
  readonly url: string;
  readonly upstream: CountingUpstream;
  readonly key: string;
};

/** `count` nodes on a new database, the model `llm` on a counting upstream, and an account with a key. */
export const startNodes = async (
  count: number,
  processing: Record<string, unknown> = {},
  label = 'airs-pgfaults',
): Promise<Nodes> => {
  const postgres = await testCluster();
  const url = await postgres.createDatabase();
  const upstream = await startCountingUpstream();
  const plain: Sandbox = sandbox(label);
  const box: Sandbox = { ...plain, env: (extra) => plain.env({ ...extra, AIRS_DATABASE_URL: url }) };
  box.writeConfig({
    models: [{ id: 'llm', provider: 'openai', baseUrl: upstream.baseUrl, upstreamModel: 'counted', maxRetries: 0 }],
    processing: { concurrency: 4, maxAttempts: 10, leaseSeconds: 3, ...processing },
    plans: { enterprise: unlimited },
  });
  const servers: ServerProcess[] = [];
  const dispose = async () => {
    await Promise.all(servers.map((server) => server.stop('SIGKILL')));
    await upstream.close();
    box.remove();
    await postgres.dropDatabase(url);
  };
  try {
    servers.push(await startServer(box));
    for (let i = 1; i < count; i++) servers.push(await startServer(box));
  } catch (error) {
    await dispose();
    throw error;
  }
  const cluster: Cluster = { servers, cli: (args) => runCli(box, args, { timeoutMs: 30_000 }), dispose };
  const account = await clusterJson<{ id: string }>(cluster, [
    'accounts',
    'create',
    '--email',
    'faults@example.com',
    '--plan',
    'enterprise',
  ]);
  const key = await clusterJson<{ key: string }>(cluster, ['keys', 'create', '--account', account.id]);
  return { ...cluster, postgres, url, upstream, key: key.key };
};

export type Answer = { readonly status: number; readonly reqId?: string; readonly at: number };

/**
 * `clients` callers, each submitting one request after another to the nodes in turn, until `stop()` is called. Every
 * answer is recorded (status, request id when 202, time); a connection that fails is recorded as status 0.
 */
export const burst = (nodes: Nodes, clients: number, prefix: string) => {
  const answers: Answer[] = [];
  let stopped = false;
  let sent = 0;
  const client = async (c: number) => {
    while (!stopped) {
      const n = sent++;
      const url = nodes.servers[n % nodes.servers.length]?.url ?? '';
      try {
        const response = await fetch(`${url}/v1/ai`, {
          method: 'POST',
          headers: { authorization: `Bearer ${nodes.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'llm', prompt: `${prefix} ${c} ${n}` }),
        });
        const body = (await response.json()) as { request_id?: string; error?: { code: string } };
        answers.push({ status: response.status, reqId: body.request_id, at: Date.now() });
        if (response.status === 503) {
          // The contract's shape of a 503, with Retry-After; a short wait, not the whole one, to keep the burst dense.
          expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
          expect(body.error?.code).toBe('server_error');
          await sleep(20);
        }
      } catch {
        answers.push({ status: 0, at: Date.now() });
        await sleep(20);
      }
    }
  };
  const running = Promise.all(Array.from({ length: clients }, (_, c) => client(c)));
  return {
    answers,
    stop: async () => {
      stopped = true;
      await running;
      return answers;
    },
  };
};

/** How many answers of each status. */
export const tally = (answers: readonly Answer[]): Record<number, number> => {
  const counts: Record<number, number> = {};
  for (const { status } of answers) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
};

/** Waits until every node's /readyz answers 200 (bounded); returns how long it took. */
export const untilReady = async (nodes: Nodes, timeoutMs = 20_000): Promise<number> => {
  const startedAt = Date.now();
  for (;;) {
    const statuses = await Promise.all(
      nodes.servers.map(async (server) => {
        try {
          return (await fetch(`${server.url}/readyz`)).status;
        } catch (error) {
          throw new Error(
            `node ${server.url} does not answer (${String(error)}); its log ends: ${server.stderr().slice(-3_000)}`,
          );
        }
      }),
    );
    if (statuses.every((status) => status === 200)) return Date.now() - startedAt;
    if (Date.now() - startedAt > timeoutMs)
      throw new Error(`nodes not ready ${timeoutMs} ms after the database came back: ${statuses.join(', ')}`);
    await sleep(50);
  }
};

/** Waits until every node LISTENs again (bounded). */
export const untilListening = async (nodes: Nodes, timeoutMs = 10_000) => {
  const deadline = Date.now() + timeoutMs;
  while ((await nodes.postgres.airsListeners(nodes.url)) < nodes.servers.length && Date.now() < deadline)
    await sleep(50);
  return nodes.postgres.airsListeners(nodes.url);
};

/**
 * Every acknowledged request is in the log and completed exactly once (one `RequestCompleted`, no attempt with two
 * outcomes), its model called once per attempt; the views match the log. Waits (bounded) for the work to finish.
 */
export const expectEveryAcknowledgedCompletedOnce = async (nodes: Nodes, acknowledged: readonly string[]) => {
  // Waiting is read from the database (cheap); the judging from the log through the CLI, as an operator reads it.
  const sql = new pg.Client({ connectionString: nodes.url });
  sql.on('error', () => {});
  await sql.connect();
  try {
    const deadline = Date.now() + 45_000;
    const unfinished = async () =>
      (
        await sql.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM unnest($1::text[]) AS a(req_id)
           LEFT JOIN requests r USING (req_id) WHERE r.status IS DISTINCT FROM 'completed'`,
          [[...acknowledged]],
        )
      ).rows[0]?.n ?? 0;
    while ((await unfinished()) > 0 && Date.now() < deadline) await sleep(200);
    const { rows: left } = await sql.query<{ req_id: string; status: string | null; lease_until: string | null }>(
      `SELECT a.req_id, r.status, r.lease_until FROM unnest($1::text[]) AS a(req_id)
       LEFT JOIN requests r USING (req_id) WHERE r.status IS DISTINCT FROM 'completed' LIMIT 5`,
      [[...acknowledged]],
    );
    console.info(
      `${acknowledged.length} acknowledged; not completed after ${Date.now() - deadline + 45_000} ms: ${JSON.stringify(left)}`,
    );
    const stuck = left[0]?.req_id;
    if (stuck !== undefined) {
      const { rows: events } = await sql.query(
        `SELECT seq, payload FROM events WHERE payload->>'reqId' = $1 ORDER BY seq`,
        [stuck],
      );
      console.info(`events of ${stuck}: ${JSON.stringify(events)}; now ${Date.now()}`);
      for (const server of nodes.servers)
        console.info(
          `${server.url} on it: ${server
            .stderr()
            .split('\n')
            .filter((line) => line.includes(stuck) || line.includes('"level":50') || line.includes('"level":60'))
            .slice(-15)
            .join('\n')}`,
        );
      console.info(`${nodes.servers[0]?.url} log tail: ${nodes.servers[0]?.stderr().slice(-4000)}`);
      const { rows: sessions } = await sql.query(
        `SELECT pid, state, wait_event_type, wait_event, now() - state_change AS for, left(query, 60) AS query
         FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'airs'`,
      );
      console.info(`the nodes' sessions: ${JSON.stringify(sessions)}`);
    }
  } finally {
    await sql.end().catch(() => {});
  }
  const log = await readLog(nodes);
  const missing = acknowledged.filter((reqId) => log.states[reqId] === undefined);
  expect(missing, 'acknowledged requests missing from the log').toEqual([]);
  const notCompleted = acknowledged.filter((reqId) => log.states[reqId] !== 'completed');
  expect(notCompleted, 'acknowledged requests not completed').toEqual([]);
  const twice = acknowledged.filter((reqId) => log.count(reqId, 'RequestCompleted') !== 1);
  expect(twice, 'requests not completed exactly once').toEqual([]);
  expect(log.attemptsWithTwoOutcomes()).toEqual([]);
  const verified = await verifyLog(nodes);
  expect(verified.code, verified.stderr).toBe(0);
  expect(verified.stdout).toMatch(/every view matches the log/);
  return log;
};
