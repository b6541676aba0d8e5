import { cpSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeRecord, encodeRecord } from '../../../src/adapters/lmdb/codec.js';
import { openDatabases, requestKey } from '../../../src/adapters/lmdb/databases.js';
import { lmdbLogSource } from '../../../src/adapters/lmdb/logSource.js';
import { openDb, sql } from '../../../src/adapters/postgres/db.js';
import { importLog } from '../../../src/adapters/postgres/importLog.js';
import { lineRequestId } from '../../../src/domain/batch/lines.js';
import { sessionBrowser } from '../../support/dashboardForm.js';
import { startFakeOpenAi } from '../../support/fakeOpenAi.js';
import { stopTestCluster, testCluster } from '../../support/postgres.js';
import {
  call,
  cliJson,
  fileSandboxes,
  poll,
  runCli,
  type Sandbox,
  type ServerProcess,
  sleep,
  startServer,
  submit,
} from '../../support/processes.js';

/**
 * `airs migrate`: a data directory made by a real `airs serve` on LMDB and the CLI, with accounts, keys, a dashboard
 * session and requests in every state, copied into an empty PostgreSQL database; `replay --verify` is clean on the
 * copy, and a server on the copy answers as the LMDB server did and goes on with the work that was left.
 */

beforeAll(() => testCluster().then(() => {}), 120_000);
afterAll(() => stopTestCluster(), 60_000);

type FakeOpenAi = Awaited<ReturnType<typeof startFakeOpenAi>>;

const newBox = fileSandboxes();

const until = async (what: string, check: () => Promise<boolean>, timeoutMs = 20_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
};

type Replay = { events: { type: string; reqId?: string; attempt?: number }[]; final_states: Record<string, string> };

/** Everything the database holds, as one text (a second migrate must change none of it). */
const contentsOf = async (url: string) => {
  const db = openDb(url, 1);
  try {
    const tables = (
      await db.query<{ name: string }[]>(
        sql`SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`,
      )
    ).map((row) => row.name);
    const parts: string[] = [];
    for (const table of tables) {
      // A count left at zero reads as no row (batch.ts: the writer's statement cannot delete the row it updates).
      const rows = table.endsWith('_counts') ? `(SELECT * FROM ${table} WHERE count <> 0)` : table;
      const [row] = await db.query<{ digest: string | null; n: string }[]>({
        text: `SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) AS digest, count(*) AS n FROM ${rows} t`,
        values: [],
      });
      parts.push(`${table}:${row?.n}:${row?.digest}`);
    }
    return parts.join('\n');
  } finally {
    await db.end();
  }
};

const tablesIn = async (url: string) => {
  const db = openDb(url, 1);
  try {
    return (
      await db.query<{ name: string }[]>(sql`SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'`)
    ).map((row) => row.name);
  } finally {
    await db.end();
  }
};

const expectOneLine = (result: { code: number | null; stderr: string; stdout: string }, code: number, why: RegExp) => {
  expect(result.code, result.stderr).toBe(code);
  expect(result.stdout).toBe('');
  expect(result.stderr.trimEnd().split('\n'), result.stderr).toHaveLength(1);
  expect(result.stderr).toMatch(why);
};

describe('airs migrate', { timeout: 180_000 }, () => {
  let box: Sandbox;
  let upstream: FakeOpenAi;
  let url: string;
  type Name = 'expired' | 'completed' | 'idempotent' | 'failed' | 'retrying' | 'processing' | 'queued' | 'cancelled';
  const ids = {} as Record<Name, string>;
  const keys = { a: '', revoked: '', c: '' };
  let accountA = '';
  let accountC = '';
  /** What the LMDB server answered to each request's poll, before it was stopped. */
  const answered = new Map<Name, { status: number; body: unknown }>();
  let session = new Map<string, string>();
  /** A batch whose one line waits, its input file deleted: the line is read from the file's bytes when it runs. */
  let batchId = '';
  let config: (ttl?: number, concurrency?: number) => unknown = () => ({});

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    box = newBox('airs-migrate');
    config = (ttl?: number, concurrency = 1) => ({
      ...(ttl === undefined ? {} : { requestTtlSeconds: ttl }),
      models: [
        { id: 'echo', provider: 'echo' },
        // Its 500s are the prompts' doing here: they must not take the one upstream out of service (contract 19).
        {
          id: 'llm',
          provider: 'openai',
          baseUrl: upstream.baseUrl,
          upstreamModel: 'tiny',
          maxRetries: 0,
          upstreamFailures: 1_000,
        },
      ],
      // One worker: a request that hangs upstream holds it, so what is submitted after stays waiting.
      processing: { concurrency, maxAttempts: 2, leaseSeconds: 3 },
      shutdownGraceSeconds: 0,
    });

    // The accounts and keys, by the CLI: A with a revoked and a named key, C suspended (with a key).
    accountA = (
      await cliJson<{ id: string }>(box, ['accounts', 'create', '--email', 'a@example.com', '--plan', 'enterprise'])
    ).id;
    keys.a = (await cliJson<{ key: string }>(box, ['keys', 'create', '--account', accountA])).key;
    const revoked = await cliJson<{ id: string; key: string }>(box, ['keys', 'create', '--account', accountA]);
    keys.revoked = revoked.key;
    expect((await runCli(box, ['keys', 'revoke', revoked.id])).code).toBe(0);
    expect((await runCli(box, ['keys', 'create', '--account', accountA, '--name', 'CI pipeline'])).code).toBe(0);
    accountC = (await cliJson<{ id: string }>(box, ['accounts', 'create', '--email', 'c@example.com'])).id;
    keys.c = (await cliJson<{ key: string }>(box, ['keys', 'create', '--account', accountC])).key;
    expect((await runCli(box, ['accounts', 'suspend', accountC])).code).toBe(0);
    // Admin keys (issue 42): one in use, one revoked.
    await cliJson(box, ['admin-keys', 'create', '--name', 'backend']);
    const revokedAdmin = await cliJson<{ id: string }>(box, ['admin-keys', 'create']);
    expect((await runCli(box, ['admin-keys', 'revoke', revokedAdmin.id])).code).toBe(0);

    // A request that expires (a TTL of 1 s for this server only), and its expiry written by the sweeper.
    box.writeConfig(config(1));
    let server = await startServer(box);
    ids.expired = String((await submit(server.url, keys.a, 'echo', 'soon gone')).body.request_id);
    await until('the expiry in the log', async () => {
      const log = await cliJson<Replay>(box, ['replay', '--request', ids.expired]);
      return log.final_states[ids.expired] === 'expired';
    });
    expect(await server.stop('SIGTERM')).toBe(0);

    box.writeConfig(config());
    server = await startServer(box);
    // B signs up on the dashboard: a password and a live session.
    const visitor = sessionBrowser(server);
    expect((await visitor.signup('b@example.com')).status).toBe(303);
    expect((await visitor.get('/dashboard/keys')).status).toBe(200);
    session = new Map(visitor.jar);

    const settled = async (name: Name, want: (status: number, body: Record<string, unknown>) => boolean) =>
      until(`${name} to settle`, async () => {
        const answer = await poll(server.url, keys.a, ids[name] as string);
        return want(answer.status, answer.body);
      });
    ids.completed = String((await submit(server.url, keys.a, 'llm', 'hello there')).body.request_id);
    await settled('completed', (_, body) => body.status === 'completed');
    const idempotent = await fetch(`${server.url}/v1/ai`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.a}`, 'content-type': 'application/json', 'idempotency-key': 'once-1' },
      body: JSON.stringify({ model: 'echo', prompt: 'only once' }),
    });
    expect(idempotent.status).toBe(202);
    ids.idempotent = String(((await idempotent.json()) as { request_id: string }).request_id);
    await settled('idempotent', (_, body) => body.status === 'completed');
    ids.failed = String((await submit(server.url, keys.a, 'llm', 'always-500')).body.request_id);
    await settled('failed', (status) => status === 500);

    // A retry waiting: its first attempt failed (seen upstream), then a request that hangs takes the one worker.
    const calls = () => upstream.calls('always-500');
    const before = calls();
    ids.retrying = String((await submit(server.url, keys.a, 'llm', 'always-500')).body.request_id);
    await until('the first attempt upstream', async () => calls() > before);
    ids.processing = String((await submit(server.url, keys.a, 'llm', 'hang')).body.request_id);
    await until('the hanging call upstream', async () => upstream.calls('hang') > 0);
    ids.queued = String((await submit(server.url, keys.a, 'llm', 'still waiting')).body.request_id);
    ids.cancelled = String((await submit(server.url, keys.a, 'echo', 'never mind')).body.request_id);
    expect((await runCli(box, ['requests', 'cancel', ids.cancelled])).code).toBe(0);
    const form = new FormData();
    form.append('purpose', 'batch');
    const line = { custom_id: 'one', method: 'POST', url: '/v1/chat/completions' };
    const body = { model: 'llm', messages: [{ role: 'user', content: 'from the file' }] };
    form.append('file', new Blob([`${JSON.stringify({ ...line, body })}\n`]), 'lines.jsonl');
    const auth = { authorization: `Bearer ${keys.a}` };
    const file = (await (
      await fetch(`${server.url}/v1/files`, { method: 'POST', headers: auth, body: form })
    ).json()) as {
      id: string;
    };
    const created = await call(server.url, 'POST', '/v1/batches', keys.a, {
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    batchId = String((created.body as { id: string }).id);
    await until('the line queued', async () => {
      const log = await cliJson<Replay>(box, ['replay', '--request', lineRequestId(batchId, 1)]);
      return log.final_states[lineRequestId(batchId, 1)] === 'waiting';
    });
    expect((await fetch(`${server.url}/v1/files/${file.id}`, { method: 'DELETE', headers: auth })).status).toBe(200);

    for (const [name, reqId] of Object.entries(ids) as [Name, string][]) {
      const answer = await poll(server.url, keys.a, reqId);
      answered.set(name, { status: answer.status, body: answer.body });
    }
    // Stopped dead, holding the hanging request's lease.
    server.child.kill('SIGKILL');
    await server.stop('SIGKILL');

    const log = await cliJson<Replay>(box, ['replay']);
    expect(log.final_states[ids.retrying]).toBe('waiting');
    expect(log.events.filter((e) => e.reqId === ids.retrying).map((e) => e.type)).toEqual([
      'RequestQueued',
      'RequestProcessingStarted',
      'RequestAttemptFailed',
    ]);
    expect(log.final_states[ids.processing]).toBe('processing');
    expect(log.final_states[ids.queued]).toBe('waiting');
    expect(log.final_states[ids.cancelled]).toBe('cancelled');
    expect(log.final_states[ids.failed]).toBe('failed');
    expect(log.final_states[ids.expired]).toBe('expired');
    expect((await runCli(box, ['replay', '--verify'])).code).toBe(0);
    url = (await (await testCluster()).createDatabase()).replace('postgres@', 'postgres:hidden@');
  }, 120_000);

  afterAll(() => upstream?.close());

  it('copies everything into an empty database: verify is clean there, and a server on it answers as the LMDB server did and goes on with the work', async () => {
    const migrated = await runCli(box, ['migrate', '--from', box.dataDir, '--to', url]);
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(migrated.stdout.trim()).toMatch(
      // 4 accounts' keys and the 2 admin keys.
      /^migrated \d+ events \(9 requests, 3 accounts, 6 keys, 1 files\) from \S+\/data to postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/\w+$/,
    );
    expect(migrated.stdout + migrated.stderr).not.toContain('hidden');
    const lmdbLog = await cliJson<Replay>(box, ['replay']);
    const events = Number(/^migrated (\d+) events/.exec(migrated.stdout)?.[1]);
    expect(events).toBe(lmdbLog.events.length);

    const verified = await runCli(box, ['replay', '--verify', '--database-url', url]);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    const onCopy = (args: string[]) => cliJson(box, [...args, '--database-url', url]);
    expect(await onCopy(['replay'])).toEqual(lmdbLog);
    expect(await onCopy(['accounts', 'list'])).toEqual(await cliJson(box, ['accounts', 'list']));
    expect(await onCopy(['keys', 'list', '--account', accountA])).toEqual(
      await cliJson(box, ['keys', 'list', '--account', accountA]),
    );
    expect(await onCopy(['admin-keys', 'list'])).toEqual(await cliJson(box, ['admin-keys', 'list']));

    // A server on the copy (AIRS_DATABASE_URL; the data directory is not used), with more workers: the request whose
    // lease lapsed is taken up again and hangs again, holding one.
    box.writeConfig(config(undefined, 3));
    const copy: ServerProcess = await startServer({
      ...box,
      env: (extra) => box.env({ ...extra, AIRS_DATABASE_URL: url }),
    });
    try {
      for (const name of ['completed', 'idempotent', 'failed', 'expired', 'cancelled'] as const) {
        const answer = await poll(copy.url, keys.a, ids[name] as string);
        expect({ status: answer.status, body: answer.body }, name).toEqual(answered.get(name));
      }
      // The idempotency index came along: the same key and body give the same request.
      const again = await fetch(`${copy.url}/v1/ai`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keys.a}`, 'content-type': 'application/json', 'idempotency-key': 'once-1' },
        body: JSON.stringify({ model: 'echo', prompt: 'only once' }),
      });
      expect(((await again.json()) as { request_id: string }).request_id).toBe(ids.idempotent);
      // Keys: the live one works, the revoked one is 401, the suspended account's is 403.
      expect((await call(copy.url, 'GET', `/v1/ai?req_id=${ids.completed}`, keys.revoked)).status).toBe(401);
      expect((await submit(copy.url, keys.c as string, 'echo', 'x')).status).toBe(403);
      // The dashboard session goes on, and the password logs in.
      expect((await sessionBrowser(copy, new Map(session)).get('/dashboard/keys')).status).toBe(200);
      expect((await sessionBrowser(copy).login('b@example.com')).status).toBe(303);
      // The work left: the waiting request completes, the retry fails for good (its second attempt), the lapsed
      // lease of the killed server's request is taken up as a new attempt.
      await until('the queued request to complete', async () => {
        const answer = await poll(copy.url, keys.a, ids.queued as string);
        return answer.body.status === 'completed';
      });
      expect((await poll(copy.url, keys.a, ids.queued as string)).body.response).toBe('upstream says: still waiting');
      await until(
        'the retry to fail for good',
        async () => (await poll(copy.url, keys.a, ids.retrying as string)).status === 500,
      );
      await until('the lapsed lease taken up', async () => {
        const log = (await onCopy(['replay', '--request', ids.processing as string])) as Replay;
        return log.events.some((e) => e.type === 'RequestProcessingStarted' && e.attempt === 2);
      });
      // The batch's line, read from its deleted input file's bytes (copied with the batch not ended), is answered.
      await until('the batch to complete', async () => {
        const batch = await call(copy.url, 'GET', `/v1/batches/${batchId}`, keys.a);
        return (batch.body as { status: string }).status === 'completed';
      });
      const output = (await call(copy.url, 'GET', `/v1/batches/${batchId}`, keys.a)).body as { output_file_id: string };
      const content = await fetch(`${copy.url}/v1/files/${output.output_file_id}/content`, {
        headers: { authorization: `Bearer ${keys.a}` },
      });
      expect(JSON.parse(await content.text()).response.body.choices[0].message.content).toBe(
        'upstream says: from the file',
      );
      const fresh = await submit(copy.url, keys.a, 'echo', 'on postgres');
      expect(fresh.status).toBe(202);
    } finally {
      await copy.stop('SIGKILL');
    }
    const after = await runCli(box, ['replay', '--verify', '--database-url', url]);
    expect(after.code, after.stdout + after.stderr).toBe(0);
  });

  it('refuses a database that already holds a store, in one line, and changes nothing there', async () => {
    const before = await contentsOf(url);
    const again = await runCli(box, ['migrate', '--from', box.dataDir, '--to', url]);
    expectOneLine(
      again,
      2,
      /^airs: the database postgres:\/\/postgres:\*\*\*@\S+ already holds an airs store with \d+ events; .*nothing was written/,
    );
    expect(await contentsOf(url)).toBe(before);
  });

  it('prints a JSON summary with --json; a database where a node made the empty schema first is accepted', async () => {
    const target = await (await testCluster()).createDatabase();
    // A node started on the database before the migration: airs's schema, no events.
    const node = await startServer({ ...box, env: (extra) => box.env({ ...extra, AIRS_DATABASE_URL: target }) });
    expect(await node.stop('SIGTERM')).toBe(0);
    expect(await tablesIn(target)).toContain('events');
    const empty = await runCli(box, ['migrate', '--from', box.dataDir, '--to', target, '--json']);
    expect(empty.code, empty.stderr).toBe(0);
    expect(JSON.parse(empty.stdout)).toMatchObject({ requests: 9, accounts: 3, keys: 6, credentials: 2 });
    expect((await runCli(box, ['replay', '--verify', '--database-url', target])).code).toBe(0);
  });

  it('refuses a database with other tables, a missing or damaged source and a URL that is not postgres://, writing nothing', async () => {
    const cluster = await testCluster();
    const other = await cluster.createDatabase();
    const db = openDb(other, 1);
    await db.query(sql`CREATE TABLE invoices (id int)`);
    await db.end();
    expectOneLine(
      await runCli(box, ['migrate', '--from', box.dataDir, '--to', other]),
      2,
      /^airs: the database \S+ is not empty: it holds 1 table\(s\) that are not airs's \(public\.invoices\)/,
    );
    expect(await tablesIn(other)).toEqual(['invoices']);

    const target = await cluster.createDatabase();
    expectOneLine(
      await runCli(box, ['migrate', '--from', join(box.dir, 'nowhere'), '--to', target]),
      2,
      /^airs: no data directory at \S+nowhere: nothing to migrate/,
    );
    const damaged = join(box.dir, 'damaged');
    cpSync(box.dataDir, damaged, { recursive: true });
    const file = join(damaged, 'airs.mdb');
    truncateSync(file, Math.floor(statSync(file).size / 2));
    expectOneLine(
      await runCli(box, ['migrate', '--from', damaged, '--to', target]),
      2,
      /^airs: .*damaged|^airs: .*bytes, its header says/,
    );
    expectOneLine(
      await runCli(box, ['migrate', '--from', box.dataDir, '--to', 'mysql://db/airs']),
      2,
      /^airs: --to: must be a postgres:\/\//,
    );
    expect(await tablesIn(target)).toEqual([]);
  });
  it('gives the same database whatever the page size (requests folded across pages of one event, texts one per statement)', async () => {
    const cluster = await testCluster();
    const [paged, whole] = [await cluster.createDatabase(), await cluster.createDatabase()];
    const dbs = openDatabases(box.dataDir);
    try {
      for (const [target, pageEvents, chunkBytes] of [
        [paged, 1, 1],
        [whole, 10_000, 1 << 30],
      ] as const) {
        const db = openDb(target, 1);
        try {
          const phases = new Set<string>();
          const summary = await importLog(db, lmdbLogSource(dbs), {
            where: 'the test database',
            pageEvents,
            chunkBytes,
            onProgress: ({ phase }) => void phases.add(phase),
          });
          expect(summary).toMatchObject({ requests: 9, accounts: 3, keys: 6, credentials: 2, differences: [] });
          expect(phases.has('events')).toBe(true);
        } finally {
          await db.end();
        }
      }
    } finally {
      await dbs.root.close();
    }
    expect(await contentsOf(paged)).toBe(await contentsOf(whole));
    expect((await runCli(box, ['replay', '--verify', '--database-url', paged])).code).toBe(0);
  });

  it('is one transaction: a copy that fails at its very end leaves the database as empty as it was', async () => {
    const target = await (await testCluster()).createDatabase();
    const dbs = openDatabases(box.dataDir);
    const db = openDb(target, 1);
    try {
      await expect(
        importLog(db, lmdbLogSource(dbs), {
          where: 'the test database',
          pageEvents: 5,
          beforeCommit: () => {
            throw new Error('the power went out');
          },
        }),
      ).rejects.toThrow('the power went out');
    } finally {
      await db.end();
      await dbs.root.close();
    }
    expect(await tablesIn(target)).toEqual([]);
  });

  it('refuses a source whose records differ from its log (exit 2, nothing written)', async () => {
    const tampered = join(box.dir, 'tampered');
    cpSync(box.dataDir, tampered, { recursive: true });
    const dbs = openDatabases(tampered);
    try {
      const key = requestKey(ids.completed);
      const { state, text } = decodeRecord(dbs.requests.get(key) as Buffer);
      await dbs.requests.put(key, encodeRecord({ ...state, context: { ...state.context, responseChars: 1 } }, text));
    } finally {
      await dbs.root.close();
    }
    const target = await (await testCluster()).createDatabase();
    expectOneLine(
      await runCli(box, ['migrate', '--from', tampered, '--to', target]),
      2,
      new RegExp(
        `^airs: request ${ids.completed}: its record differs from the state its events give; nothing was written`,
      ),
    );
    expect(await tablesIn(target)).toEqual([]);
  });
});
