import { rmSync } from 'node:fs';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { decodeMap, encodeMap } from '../../src/adapters/lmdb/codec.js';
import { openDatabases } from '../../src/adapters/lmdb/databases.js';
import { openLmdbStore } from '../../src/adapters/lmdb/LmdbStore.js';
import { lmdbLogSource } from '../../src/adapters/lmdb/logSource.js';
import { commitInTransaction } from '../../src/adapters/postgres/batch.js';
import { openDb, type Query, sql } from '../../src/adapters/postgres/db.js';
import { importLog, SourceDamaged } from '../../src/adapters/postgres/importLog.js';
import {
  openPostgresStore,
  type PostgresStore,
  PostgresStoreLayer,
} from '../../src/adapters/postgres/PostgresStore.js';
import { verifyPostgres } from '../../src/adapters/postgres/verify.js';
import type { Command } from '../../src/domain/commands.js';
import { defaultPlans } from '../../src/domain/plans.js';
import { defaultWebhookBackoff } from '../../src/domain/webhook/backoff.js';
import { type DeliveryAsk, type EndpointAsk, webhookSecretCredentialKey } from '../../src/domain/webhook/commands.js';
import { webhookDeliveryId, webhookEventId } from '../../src/domain/webhook/eventTypes.js';
import { systemClock } from '../../src/ports/Clock.js';
import type { StoreShape } from '../../src/ports/Store.js';
import { stopTestCluster, testCluster } from '../support/postgres.js';
import { startScriptedReceiver } from '../support/scriptedReceiver.js';
import { eventually as appEventually, startTestApp, tempDataDir } from '../support/testApp.js';
import { addWebhookEndpoint } from '../support/webhookEndpoints.js';
import { accountId, commitOne, createAccount, eventsOf, eventually, submit } from './fixtures.js';

/**
 * What the PostgreSQL store does for webhooks beyond the contract (test/contract/features/webhooks.ts): the outbox read
 * on the hot path of every request's ending is prefetched (one statement, one round), webhook commits are heard by
 * other nodes, the retention it is opened with is the one deliveries get, and `replay --verify` checks the webhook
 * tables against the log.
 */

beforeAll(() => testCluster().then(() => {}), 120_000);
afterAll(() => stopTestCluster(), 60_000);

const endpointIdOf = (n: number) => `whep_${String(n).padStart(16, 'E')}`;
const reqIdOf = (n: number) => `req_${String(n).padStart(30, 'r')}`;
const endpoint = (endpointId: string, command: EndpointAsk): Command => ({
  type: 'WebhookEndpoint',
  endpointId,
  command,
});
const delivery = (deliveryId: string, command: DeliveryAsk): Command => ({
  type: 'WebhookDelivery',
  deliveryId,
  command,
});
const addEndpoint = (n: number, account = 1, now = 10) =>
  endpoint(endpointIdOf(n), {
    type: 'AddEndpoint',
    accountId: accountId(account),
    url: `https://hooks.example.com/${n}`,
    events: [],
    secretId: `sec_${n}`,
    secret: `whsec_secret${n}`,
    plans: defaultPlans,
    allowHttp: false,
    now,
  });
const cancel = (reqId: string, now: number): Command => ({ type: 'Cancel', reqId, now });
const cancelledDelivery = (reqId: string, endpointId: string) =>
  webhookDeliveryId(webhookEventId(reqId, 'request.cancelled'), endpointId);
const scale = (n: number): Command => ({
  type: 'Account',
  accountId: accountId(n),
  command: { type: 'ChangePlan', plan: 'scale', now: 2 },
});

/** Endpoints added, rotated and removed; deliveries waiting, being sent, failed and due again, delivered. */
const fillWebhooks = async (store: StoreShape) => {
  const commit = async (batch: { commands: Command[] }) => {
    for (const outcome of await store.commit(batch))
      if (outcome instanceof Error) throw new Error(`the fixture was refused: ${outcome.message}`);
  };
  await commit({
    commands: [createAccount(1), scale(1), addEndpoint(1), addEndpoint(2, 1, 11), addEndpoint(3, 1, 12)],
  });
  await commit({ commands: [1, 2, 3].map((n) => submit(reqIdOf(n), { now: 20 })) });
  await commit({ commands: [1, 2, 3].map((n) => cancel(reqIdOf(n), 30 + n)) });
  const sent = cancelledDelivery(reqIdOf(1), endpointIdOf(1));
  const failed = cancelledDelivery(reqIdOf(1), endpointIdOf(2));
  const start = (id: string) => delivery(id, { type: 'StartAttempt', owner: 'sender_a', leaseMs: 10_000, now: 40 });
  await commit({ commands: [start(sent), start(failed)] });
  await commit({
    commands: [
      delivery(sent, {
        type: 'RecordSuccess',
        outcome: { attempt: 1, owner: 'sender_a', status: 204, latencyMs: 3 },
        now: 50,
      }),
      delivery(failed, {
        type: 'RecordFailure',
        outcome: { attempt: 1, owner: 'sender_a', status: 500, latencyMs: 4, error: 'answered 500' },
        policy: defaultWebhookBackoff,
        random: 0.5,
        now: 50,
      }),
      endpoint(endpointIdOf(1), {
        type: 'RotateSecret',
        accountId: accountId(1),
        secretId: 'sec_1b',
        secret: 'whsec_1b',
        now: 60,
      }),
      endpoint(endpointIdOf(3), { type: 'RemoveEndpoint', accountId: accountId(1), now: 70 }),
    ],
  });
};

describe('webhooks on PostgreSQL', () => {
  let url: string;
  let store: PostgresStore;
  const rounds: number[] = [];
  const opened: PostgresStore[] = [];
  const open = async (options: Parameters<typeof openPostgresStore>[1] = {}) => {
    const handle = await openPostgresStore(url, { maxConnections: 4, onBatch: (n) => rounds.push(n), ...options });
    opened.push(handle);
    return handle;
  };

  beforeEach(async () => {
    url = await (await testCluster()).createDatabase();
    rounds.length = 0;
    store = await open();
  }, 60_000);

  afterEach(async () => {
    for (const handle of opened.splice(0)) await handle.close();
    await (await testCluster()).dropDatabase(url);
  });

  /** Commits `commands` in one transaction as the store does, and gives the statements it ran besides the outcomes. */
  const commitCounting = async (commands: readonly Command[]) => {
    const statements: string[] = [];
    const result = await store.db.begin((query) => {
      const counting: Query = (statement) => {
        statements.push(statement.text);
        return query(statement);
      };
      return commitInTransaction(counting, { commands });
    });
    return { ...result, webhookStatements: statements.filter((text) => text.includes('webhook_')) };
  };

  it('decides request endings in one round and reads webhooks in one statement, whether their accounts have endpoints or not', async () => {
    await store.commit({ commands: [createAccount(1), createAccount(2, 'two@example.com'), addEndpoint(1)] });
    await store.commit({ commands: [1, 2, 3].map((n) => submit(reqIdOf(n), { now: 20, account: n === 3 ? 2 : 1 })) });
    // Submits end nothing: no webhook read at all.
    expect((await commitCounting([submit(reqIdOf(4), { now: 21, account: 2 })])).webhookStatements).toEqual([]);
    // Account 2 has no endpoint: one statement finds that, and the batch is decided once.
    const none = await commitCounting([cancel(reqIdOf(3), 30), cancel(reqIdOf(4), 30)]);
    expect(none.rounds).toBe(1);
    expect(none.webhookStatements).toHaveLength(1);
    expect(none.outcomes.map((outcome) => eventsOf(outcome).map((e) => e.type))).toEqual([
      ['RequestCancelled'],
      ['RequestCancelled'],
    ]);
    // Account 1 has one: still one round (its endpoints and the deliveries already made came with that statement),
    // plus the write of the deliveries.
    const some = await commitCounting([cancel(reqIdOf(1), 30), cancel(reqIdOf(2), 30)]);
    expect(some.rounds).toBe(1);
    expect(some.webhookStatements).toHaveLength(2);
    expect(some.outcomes.map((outcome) => eventsOf(outcome).map((e) => e.type))).toEqual([
      ['RequestCancelled', 'WebhookDeliveryDue'],
      ['RequestCancelled', 'WebhookDeliveryDue'],
    ]);
    // The webhook commands read what they need with the writer's lock too.
    rounds.length = 0;
    const deliveryId = cancelledDelivery(reqIdOf(1), endpointIdOf(1));
    await commitOne(store, delivery(deliveryId, { type: 'StartAttempt', owner: 'sender_a', leaseMs: 1_000, now: 40 }));
    await commitOne(
      store,
      endpoint(endpointIdOf(1), {
        type: 'RotateSecret',
        accountId: accountId(1),
        secretId: 'sec_b',
        secret: 'whsec_b',
        now: 50,
      }),
    );
    await store.commit({ commands: [scale(1), addEndpoint(2, 1, 60)] });
    expect(rounds).toEqual([1, 1, 1]);
  });

  it('gives the deliveries it makes due the retention it was opened with', async () => {
    const short = await open({ webhookRetentionMs: 5_000 });
    await short.commit({ commands: [createAccount(1), addEndpoint(1), submit(reqIdOf(1), { now: 20 })] });
    const ended = await commitOne(short, cancel(reqIdOf(1), 30));
    expect(eventsOf(ended)[1]).toMatchObject({ type: 'WebhookDeliveryDue', giveUpAt: 5_030 });
    const ordinary = await commitOne(store, submit(reqIdOf(2), { now: 40 }));
    expect(eventsOf(ordinary)).toHaveLength(1);
    const [, due] = eventsOf(await commitOne(store, cancel(reqIdOf(2), 50)));
    expect(due).toMatchObject({ giveUpAt: 50 + defaultWebhookBackoff.maxTotalMs });
  });

  it('tells another node of a commit that holds webhook events only (its sender wakes)', async () => {
    await store.commit({ commands: [createAccount(1), addEndpoint(1), submit(reqIdOf(1), { now: 20 })] });
    await commitOne(store, cancel(reqIdOf(1), 30));
    const other = await open();
    let heard = 0;
    const stop = other.reads.onChange(() => heard++);
    try {
      const deliveryId = cancelledDelivery(reqIdOf(1), endpointIdOf(1));
      await commitOne(store, delivery(deliveryId, { type: 'StartAttempt', owner: 'sender_a', leaseMs: 100, now: 40 }));
      await eventually(() => heard > 0, 10_000, 'the webhook commit was heard by the other node');
      expect(await other.reads.webhookDelivery(deliveryId)).toMatchObject({ status: 'sending' });
    } finally {
      stop();
    }
  });

  describe('replay --verify', () => {
    const removed = endpointIdOf(3);
    const waiting = () => cancelledDelivery(reqIdOf(2), endpointIdOf(1));

    beforeEach(() => fillWebhooks(store), 60_000);

    /** Breaks the store with SQL statements, then verifies it. */
    const afterBreaking = async (...statements: string[]) => {
      for (const text of statements) await store.db.query({ text, values: [] });
      return (await verifyPostgres(store.db)).differences;
    };

    it('finds nothing to report in what the store wrote', async () => {
      expect((await verifyPostgres(store.db)).differences).toEqual([]);
      expect((await verifyPostgres(store.db, { pageSize: 2 })).differences).toEqual([]);
      const [counts] = await store.db.query<{ endpoints: number; deliveries: number; due: number }[]>(sql`
        SELECT (SELECT count(*)::int FROM webhook_endpoints) AS endpoints,
          (SELECT count(*)::int FROM webhook_deliveries) AS deliveries,
          (SELECT count(*)::int FROM webhook_deliveries WHERE due_at IS NOT NULL) AS due`);
      expect(counts).toEqual({ endpoints: 3, deliveries: 9, due: 8 });
    });

    it('names a delivery whose due time (what the due index is over) differs from its fold', async () => {
      expect(
        await afterBreaking(`UPDATE webhook_deliveries SET due_at = NULL WHERE delivery_id = '${waiting()}'`),
      ).toEqual([`webhook delivery ${waiting()}: column due_at stored null, the log gives 32`]);
    });

    it("names a removed endpoint still listed among its account's", async () => {
      expect(
        await afterBreaking(`UPDATE webhook_endpoints SET listed = true WHERE endpoint_id = '${removed}'`),
      ).toEqual([`webhook endpoint ${removed}: column listed stored true, the log gives false`]);
    });

    it("names an endpoint's view that differs from the log's, and a delivery missing", async () => {
      expect(
        await afterBreaking(
          `UPDATE webhook_endpoints SET state = jsonb_set(state::jsonb, '{url}', '"https://elsewhere.example"')::json
           WHERE endpoint_id = '${endpointIdOf(2)}'`,
          `DELETE FROM webhook_deliveries WHERE delivery_id = '${waiting()}'`,
        ),
      ).toEqual([
        `webhook endpoint ${endpointIdOf(2)}: the stored view differs from the log's`,
        `webhook delivery ${waiting()}: produced by the log but not stored`,
      ]);
    });

    it('names a signing secret missing, and one kept for a removed endpoint', async () => {
      expect(
        await afterBreaking(
          `DELETE FROM credentials WHERE key = 'webhookSecret:sec_1'`,
          `INSERT INTO credentials (key, value) VALUES ('webhookSecret:sec_3', 'whsec_back')`,
        ),
      ).toEqual([
        'credential webhookSecret:sec_3: stored but the log sets no such credential',
        'credential webhookSecret:sec_1: the log sets it but it is missing',
      ]);
    });
  });

  it('copies webhook endpoints, deliveries and their secrets from an LMDB data directory (airs migrate), in pages of one event or of all', async () => {
    const dir = tempDataDir('airs-import-webhooks');
    try {
      const source = openLmdbStore(dir);
      await fillWebhooks(source);
      const expected = await webhookReads(source);
      expect(expected.deliveries.flat()).toHaveLength(9);
      await source.close();
      const dbs = openDatabases(dir);
      try {
        for (const pageEvents of [1, 10_000]) {
          const target = await (await testCluster()).createDatabase();
          const db = openDb(target, 1);
          try {
            expect(
              (await importLog(db, lmdbLogSource(dbs), { where: 'the test database', pageEvents })).differences,
            ).toEqual([]);
          } finally {
            await db.end();
          }
          const copy = await openPostgresStore(target, { maxConnections: 2 });
          try {
            expect(JSON.parse(JSON.stringify(await webhookReads(copy)))).toEqual(JSON.parse(JSON.stringify(expected)));
          } finally {
            await copy.close();
            await (await testCluster()).dropDatabase(target);
          }
        }
      } finally {
        await dbs.root.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses a data directory whose delivery record differs from its log's, and writes nothing", async () => {
    const dir = tempDataDir('airs-import-webhooks-damaged');
    try {
      const source = openLmdbStore(dir);
      await fillWebhooks(source);
      await source.close();
      const dbs = openDatabases(dir);
      try {
        const id = cancelledDelivery(reqIdOf(2), endpointIdOf(2));
        const view = decodeMap<{ status: string }>(dbs.webhookDeliveries.get(id) as Buffer);
        await dbs.webhookDeliveries.put(id, encodeMap({ ...view, status: 'delivered' }));
        const target = await (await testCluster()).createDatabase();
        const db = openDb(target, 1);
        try {
          const refusal = await importLog(db, lmdbLogSource(dbs), { where: 'the test database' }).then(
            () => undefined,
            (error: unknown) => error,
          );
          expect(refusal).toBeInstanceOf(SourceDamaged);
          expect((refusal as Error).message).toBe(
            `webhook delivery ${id}: its record differs from the view its events give`,
          );
          const [tables] = await db.query<{ none: boolean }[]>(sql`SELECT to_regclass('events') IS NULL AS none`);
          expect(tables?.none).toBe(true);
        } finally {
          await db.end();
          await (await testCluster()).dropDatabase(target);
        }
      } finally {
        await dbs.root.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** What the read model answers of the webhooks `fillWebhooks` made. */
const webhookReads = async (store: StoreShape) => ({
  listed: await store.reads.webhookEndpointsOf(accountId(1)),
  endpoints: await Promise.all([1, 2, 3].map((n) => store.reads.webhookEndpoint(endpointIdOf(n)))),
  deliveries: await Promise.all([1, 2, 3].map((n) => store.reads.webhookDeliveriesOf(endpointIdOf(n), { limit: 100 }))),
  due: await store.reads.dueWebhookDeliveries(45, { perEndpoint: 10, limit: 100 }),
  later: await store.reads.dueWebhookDeliveries(1e12, { perEndpoint: 10, limit: 100 }),
  secrets: await Promise.all(
    ['sec_1', 'sec_1b', 'sec_2', 'sec_3'].map((id) => store.reads.credential(webhookSecretCredentialKey(id))),
  ),
});

describe('the webhook sender on PostgreSQL', () => {
  it('posts a request ending to its endpoint, signed so the openai SDK accepts it, and records it delivered', async () => {
    const url = await (await testCluster()).createDatabase();
    const hooks = await startScriptedReceiver({});
    const app = await startTestApp({
      clock: systemClock,
      storeLayer: PostgresStoreLayer(url, { maxConnections: 4 }),
      config: {
        models: [{ id: 'echo', provider: 'echo', delayMs: 0, timeoutMs: 60_000 }],
        webhooks: {
          allowHttp: true,
          allowPrivateNetworks: true,
          retentionHours: 72,
          maxInFlight: 4,
          maxInFlightPerEndpoint: 2,
          maxInFlightPerAccount: 4,
        },
      },
    });
    try {
      const account = await app.account('scale');
      const { secret, endpointId } = await addWebhookEndpoint(app, {
        accountId: account.accountId,
        url: hooks.url('/hooks'),
      });
      const submitted = await app.call('POST', '/v1/ai', {
        key: account.key,
        body: { model: 'echo', prompt: 'hello hooks' },
      });
      expect(submitted.status).toBe(202);
      const reqId = ((await submitted.json()) as { request_id: string }).request_id;
      await appEventually(() => (hooks.posted.length >= 1 ? true : undefined), 15_000);
      const [post] = hooks.posted;
      if (post === undefined) throw new Error('nothing was posted');
      const event = await new OpenAI({ apiKey: 'x', webhookSecret: secret }).webhooks.unwrap(
        post.body,
        post.headers as Record<string, string>,
      );
      expect(event).toMatchObject({ type: 'request.completed', data: { id: reqId } });
      const deliveryId = webhookDeliveryId(webhookEventId(reqId, 'request.completed'), endpointId);
      expect(post.headers['webhook-id']).toBe(deliveryId);
      await appEventually(
        async () => ((await app.store.reads.webhookDelivery(deliveryId))?.status === 'delivered' ? true : undefined),
        10_000,
      );
    } finally {
      await app.stop();
      await hooks.close();
      await (await testCluster()).dropDatabase(url);
    }
  });
});
