import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { unusedPort } from '../support/ports.js';
import { stopTestCluster, testCluster } from '../support/postgres.js';
import {
  cliJson,
  createAccountWithKey,
  killChildren,
  poll,
  type Sandbox,
  type ServerProcess,
  sandbox,
  sleep,
  startServer,
  submit,
} from '../support/processes.js';
import { type Answer, type Posted, type ScriptedReceiver, startScriptedReceiver } from '../support/scriptedReceiver.js';

// Issue 30, "On PostgreSQL with 3 nodes: each event delivered, once in the normal case": three `airs serve` processes
// (the built CLI, each on its own fixed port) on one PostgreSQL database, every one of them running a sender on the
// same outbox. Endpoints are added with the CLI, the deliveries read back with it.

type DeliveryJson = { readonly id: string; readonly status: string; readonly attempts: number };

type Node = { readonly box: Sandbox; readonly databaseUrl: string; readonly servers: ServerProcess[] };

type Endpoint = { readonly accountId: string; readonly key: string; readonly id: string; readonly secret: string };

/** The attempt lease of the sender (`webhookLeaseMs`): an attempt cut by a dead node is taken up after it. */
const leaseMs = 30_000;

let cleanups: (() => Promise<void>)[] = [];

beforeAll(() => testCluster().then(() => {}), 120_000);
afterEach(async () => {
  await killChildren();
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});
afterAll(() => stopTestCluster(), 60_000);

/** A new database, a config with webhooks to plain HTTP on 127.0.0.1 and an echo model, and `count` nodes on it. */
const startNodes = async (count: number): Promise<Node> => {
  const postgres = await testCluster();
  const databaseUrl = await postgres.createDatabase();
  const plain = sandbox('airs-webhooks-pg');
  const box: Sandbox = { ...plain, env: (extra) => plain.env({ ...extra, AIRS_DATABASE_URL: databaseUrl }) };
  cleanups.push(async () => {
    box.remove();
    await postgres.dropDatabase(databaseUrl);
  });
  box.writeConfig({
    models: [{ id: 'echo', provider: 'echo' }],
    webhooks: { allowHttp: true, allowPrivateNetworks: true },
  });
  // Each on the fixed port an operator would give it. The first alone, as it makes the schema; the others together.
  const startNode = async () => startServer(box, { env: { PORT: String(await unusedPort()) }, timeoutMs: 30_000 });
  const first = await startNode();
  const servers = [first, ...(await Promise.all(Array.from({ length: count - 1 }, startNode)))];
  return { box, databaseUrl, servers };
};

/** An account on `scale` with a key, and one endpoint of it on `url` (`airs webhooks add … --json`: its secret). */
const accountWithEndpoint = async (box: Sandbox, email: string, url: string): Promise<Endpoint> => {
  const { accountId, key } = await createAccountWithKey(box, email, 'scale');
  const added = await cliJson<{ id: string; secret: string }>(box, [
    'webhooks',
    'add',
    '--account',
    accountId,
    '--url',
    url,
    '--json',
  ]);
  return { accountId, key, id: added.id, secret: added.secret };
};

const deliveriesOf = (box: Sandbox, endpoint: Endpoint) =>
  cliJson<DeliveryJson[]>(box, [
    'webhooks',
    'deliveries',
    endpoint.id,
    '--account',
    endpoint.accountId,
    '--limit',
    '100',
    '--json',
  ]);

/** Submits `perAccount` echo requests for each endpoint's account, request i to node i mod 3; their ids by endpoint. */
const submitSpread = async (servers: readonly ServerProcess[], endpoints: readonly Endpoint[], perAccount: number) => {
  const submitted = new Map<string, string[]>();
  for (const endpoint of endpoints) submitted.set(endpoint.id, []);
  const jobs = endpoints.flatMap((endpoint) =>
    Array.from({ length: perAccount }, (_, i) => ({ endpoint, i, server: servers[i % servers.length] })),
  );
  // A few at a time: the nodes are busy at once, and the shared machine is not flooded.
  for (let at = 0; at < jobs.length; at += 6)
    await Promise.all(
      jobs.slice(at, at + 6).map(async ({ endpoint, i, server }) => {
        const answer = await submit((server as ServerProcess).url, endpoint.key, 'echo', `hello ${i}`);
        expect(answer.status).toBe(202);
        submitted.get(endpoint.id)?.push(String(answer.body.request_id));
      }),
    );
  return submitted;
};

const waitCompleted = async (url: string, key: string, reqIds: readonly string[], deadline: number) => {
  for (const reqId of reqIds)
    for (;;) {
      const answer = await poll(url, key, reqId);
      if (answer.body.status === 'completed') break;
      if (Date.now() > deadline) throw new Error(`request ${reqId} is still ${String(answer.body.status)}`);
      await sleep(50);
    }
};

/** The posts to `path`, counted by their `webhook-id`. */
const postsById = (receiver: ScriptedReceiver, path: string) => {
  const counts = new Map<string, number>();
  for (const post of receiver.to(path)) {
    const id = String(post.headers['webhook-id']);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
};

/** Verifies every post to `path` with the openai SDK and the endpoint's secret; the request ids they are about. */
const verifiedDataIds = async (receiver: ScriptedReceiver, path: string, secret: string) => {
  const sdk = new OpenAI({ apiKey: 'x', webhookSecret: secret });
  const ids = await Promise.all(
    receiver.to(path).map(async (post) => {
      const event = await sdk.webhooks.unwrap(post.body, post.headers as Record<string, string>);
      expect(event.type).toBe('request.completed');
      return (event as unknown as { data: { id: string } }).data.id;
    }),
  );
  return new Set(ids);
};

/** Waits until every delivery of each endpoint reads `delivered` (or the deadline); returns the last views. */
const waitDelivered = async (box: Sandbox, endpoints: readonly Endpoint[], expected: number, deadline: number) => {
  for (;;) {
    const views = await Promise.all(endpoints.map((endpoint) => deliveriesOf(box, endpoint)));
    const done = views.every((one) => one.length === expected && one.every((d) => d.status === 'delivered'));
    if (done || Date.now() > deadline) return views;
    await sleep(250);
  }
};

describe('webhooks on PostgreSQL with 3 nodes', () => {
  it('delivers each request.completed event exactly once when every node is well, verified with the openai SDK', {
    timeout: 110_000,
  }, async () => {
    const receiver = await startScriptedReceiver();
    cleanups.push(() => receiver.close());
    const { box, servers } = await startNodes(3);
    const endpoints = [
      await accountWithEndpoint(box, 'a@example.com', receiver.url('/a')),
      await accountWithEndpoint(box, 'b@example.com', receiver.url('/b')),
    ];
    const paths = ['/a', '/b'];
    const perAccount = 30;
    const deadline = Date.now() + 60_000;

    const submitted = await submitSpread(servers, endpoints, perAccount);
    for (const endpoint of endpoints)
      await waitCompleted((servers[0] as ServerProcess).url, endpoint.key, submitted.get(endpoint.id) ?? [], deadline);

    // Every delivery recorded delivered: after that no node posts any of them again.
    const views = await waitDelivered(box, endpoints, perAccount, deadline);
    // A moment for a second post that a double send would make, had it been slower than the record.
    await sleep(1_000);

    paths.forEach((path, i) => {
      const view = views[i] ?? [];
      expect(view.map((d) => d.status)).toEqual(Array(perAccount).fill('delivered'));
      expect(view.map((d) => d.attempts)).toEqual(Array(perAccount).fill(1));
      const counts = postsById(receiver, path);
      // Exactly once: one post for each delivery, and none for anything else.
      expect([...counts.keys()].sort()).toEqual(view.map((d) => d.id).sort());
      expect([...counts.values()]).toEqual(Array(perAccount).fill(1));
    });
    for (const [i, endpoint] of endpoints.entries())
      expect(await verifiedDataIds(receiver, paths[i] as string, endpoint.secret)).toEqual(
        new Set(submitted.get(endpoint.id)),
      );
  });

  it('delivers every event, with the same webhook-ids, after a node is killed with posts in flight, within the lease', {
    timeout: 110_000,
  }, async () => {
    // Posts held 2 s at first, so that every node has some open when one is killed; then answered at once.
    let holdMs = 2_000;
    const receiver = await startScriptedReceiver({
      answer: (): Answer => (holdMs === 0 ? 200 : { status: 200, delayMs: holdMs }),
    });
    cleanups.push(() => receiver.close());
    const { box, servers } = await startNodes(3);
    const endpoints = [
      await accountWithEndpoint(box, 'c@example.com', receiver.url('/c')),
      await accountWithEndpoint(box, 'd@example.com', receiver.url('/d')),
    ];
    const paths = ['/c', '/d'];
    // More than the nodes may hold at once (4 per endpoint each: 24 in all), so every node fills its places.
    const perAccount = 20;
    const open = () => paths.reduce((sum, path) => sum + receiver.open(path), 0);

    const submitted = await submitSpread(servers, endpoints, perAccount);
    // 20 of the 24 places taken: the other two nodes hold 16 at most, so the one killed holds 4 or more.
    const filled = Date.now() + 30_000;
    while (open() < 20 && Date.now() < filled) await sleep(10);
    expect(open()).toBeGreaterThanOrEqual(20);
    const webhookIdsOf = (posts: readonly Posted[]) => posts.map((post) => String(post.headers['webhook-id']));
    const postedBeforeKill = new Set(paths.flatMap((path) => webhookIdsOf(receiver.to(path))));
    const victim = servers[2] as ServerProcess;
    await victim.stop('SIGKILL');
    const killedAt = Date.now();
    // Posts after the kill by order of arrival, not by clock (a post can share the kill's millisecond).
    const postsAtKill = paths.map((path) => receiver.to(path).length);
    holdMs = 0;

    const living = servers[0] as ServerProcess;
    const deadline = killedAt + leaseMs + 20_000;
    for (const endpoint of endpoints)
      await waitCompleted(living.url, endpoint.key, submitted.get(endpoint.id) ?? [], deadline);
    // The cut posts come again only once their lease lapses: waited for here on the receiver, in this process, rather
    // than by reading the deliveries with the CLI all that while (a process start, a second of CPU, each read).
    const postedAgain = () =>
      paths.some((path, i) =>
        webhookIdsOf(receiver.to(path).slice(postsAtKill[i])).some((id) => postedBeforeKill.has(id)),
      );
    while (!postedAgain() && Date.now() < deadline) await sleep(100);
    // Past the deadline, a delivery still `sending` shows an attempt cut by the kill never taken up.
    const views = await waitDelivered(box, endpoints, perAccount, deadline);

    let cut = 0;
    paths.forEach((path, i) => {
      const view = views[i] ?? [];
      expect(view.map((d) => d.status)).toEqual(Array(perAccount).fill('delivered'));
      // At least once, under the ids the deliveries were made with; the killed node's posts came again.
      const counts = postsById(receiver, path);
      expect([...counts.keys()].sort()).toEqual(view.map((d) => d.id).sort());
      cut += [...counts.values()].filter((count) => count > 1).length;
    });
    // The kill did cut posts in flight (those the killed node held), and they were sent again.
    expect(cut).toBeGreaterThanOrEqual(4);
    for (const [i, endpoint] of endpoints.entries())
      expect(await verifiedDataIds(receiver, paths[i] as string, endpoint.secret)).toEqual(
        new Set(submitted.get(endpoint.id)),
      );
  });
});
