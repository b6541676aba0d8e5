import { rmSync } from 'node:fs';
import { Effect, ManagedRuntime, Result } from 'effect';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStoreLayer } from '../../src/adapters/memory/MemoryStore.js';
import type { Resolver } from '../../src/adapters/webhooks/destination.js';
import { webhookUrlProblem } from '../../src/adapters/webhooks/urlCheck.js';
import { Accounts } from '../../src/app/Accounts.js';
import { Committer } from '../../src/app/Committer.js';
import { Webhooks } from '../../src/app/webhooks/Webhooks.js';
import { managementLayer } from '../../src/baseLayer.js';
import { type Config, defaultConfig, webhookRetentionMs } from '../../src/config.js';
import type { Command } from '../../src/domain/commands.js';
import { AccountLimitReached, Refused } from '../../src/domain/errors.js';
import type { PlanName } from '../../src/domain/plans.js';
import { defaultWebhookBackoff } from '../../src/domain/webhook/backoff.js';
import { webhookSecretCredentialKey } from '../../src/domain/webhook/commands.js';
import { rotationOverlapMs, signingSecretIds } from '../../src/domain/webhook/endpoint.js';
import { webhookDeliveryId, webhookEventId } from '../../src/domain/webhook/eventTypes.js';
import { ManualClock } from '../../src/ports/Clock.js';
import { randomIds } from '../../src/ports/Ids.js';
import { silentLogger } from '../../src/ports/Logger.js';
import { Store } from '../../src/ports/Store.js';
import { tempDataDir } from '../support/testApp.js';

/*
 * Issue 30: the Webhooks service as the CLI and the dashboard call it (the management layer the CLI runs on), on each
 * store. Names are resolved by the test (no DNS here): hooks.example.com to a public address, internal.example.com to
 * a private one; the address rules themselves are the real ones (adapters/webhooks/urlCheck.ts).
 */

const names: Record<string, string> = { 'hooks.example.com': '93.184.215.14', 'internal.example.com': '10.1.2.3' };
const resolve: Resolver = async (hostname) => {
  const address = names[hostname];
  if (address === undefined) throw Object.assign(new Error(`no such name ${hostname}`), { code: 'ENOTFOUND' });
  return [{ address, family: 4 }];
};

type Setup = { readonly webhooks?: Partial<Config['webhooks']> };

const stores: readonly {
  readonly name: string;
  readonly storeLayer: () => ReturnType<typeof MemoryStoreLayer> | undefined;
}[] = [
  { name: 'memory', storeLayer: () => MemoryStoreLayer() },
  // The config's store: LMDB in the test's data directory.
  { name: 'LMDB', storeLayer: () => undefined },
];

describe.each(stores)('The Webhooks service on the $name store', ({ storeLayer }) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  const start = async ({ webhooks = {} }: Setup = {}) => {
    const dataDir = tempDataDir('airs-webhooks');
    const defaults = defaultConfig({ dataDir });
    const config: Config = { ...defaults, webhooks: { ...defaults.webhooks, ...webhooks } };
    const clock = new ManualClock();
    const layer = storeLayer();
    const runtime = ManagedRuntime.make(
      managementLayer({
        config,
        logger: silentLogger(),
        clock,
        ...(layer === undefined ? {} : { storeLayer: layer }),
        webhookDestinations: { problem: (url, policy) => webhookUrlProblem(url, policy, resolve) },
      }),
    );
    cleanups.push(async () => {
      await runtime.dispose();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const services = await runtime.runPromise(
      Effect.gen(function* () {
        return {
          webhooks: yield* Webhooks,
          accounts: yield* Accounts,
          store: yield* Store,
          committer: yield* Committer,
        };
      }),
    );
    const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect);
    const failure = async <A, E>(effect: Effect.Effect<A, E>): Promise<E> => {
      const result = await Effect.runPromise(Effect.result(effect));
      if (Result.isSuccess(result)) throw new Error('expected a failure');
      return result.failure;
    };
    let accounts = 0;
    const account = async (plan: PlanName = 'free') => {
      const created = await run(services.accounts.createAccount(`hooks${++accounts}@example.com`, plan));
      return created.accountId;
    };
    const send = async (command: Command) => {
      const outcome = await services.committer.send(command);
      if (outcome instanceof Error) throw outcome;
      return outcome;
    };
    /** A request of `accountId` cancelled now: one `request.cancelled` delivery to each of its endpoints. */
    const cancelledRequest = async (accountId: string) => {
      const reqId = randomIds.requestId();
      const now = clock.now();
      await send({
        type: 'Submit',
        reqId,
        accountId,
        keyId: 'key_AAAAAAAAAAAAAAAA',
        model: 'echo',
        prompt: 'hello',
        promptChars: 5,
        ttlMs: 3_600_000,
        now,
      });
      await send({ type: 'Cancel', reqId, now });
      return reqId;
    };
    const deliveryOf = (reqId: string, endpointId: string) =>
      webhookDeliveryId(webhookEventId(reqId, 'request.cancelled'), endpointId);
    return { ...services, config, clock, run, failure, account, send, cancelledRequest, deliveryOf };
  };

  it('adds an endpoint receiving every event, shows its secret once, and lists it without the secret', async () => {
    const app = await start();
    const accountId = await app.account();
    const added = await app.run(app.webhooks.add(accountId, ' https://hooks.example.com/airs ', []));
    expect(added.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(added.endpoint).toMatchObject({
      accountId,
      url: 'https://hooks.example.com/airs',
      events: [],
      status: 'enabled',
      createdAt: app.clock.now(),
    });
    expect(added.endpoint.endpointId).toMatch(/^whep_[A-Za-z0-9_-]{16}$/);
    // Kept beside the log for the sender, and never in what a list shows.
    expect(await app.store.reads.credential(webhookSecretCredentialKey(added.endpoint.secretId))).toBe(added.secret);
    const listed = await app.run(app.webhooks.list(accountId));
    expect(listed).toEqual([added.endpoint]);
    expect(JSON.stringify(listed)).not.toContain('whsec_');
  });

  it('takes the event types named, in their order, and refuses an unknown one by name, adding nothing', async () => {
    const app = await start();
    const accountId = await app.account('starter');
    const added = await app.run(
      app.webhooks.add(accountId, 'https://hooks.example.com/a', ['request.failed', ' request.completed']),
    );
    expect(added.endpoint.events).toEqual(['request.completed', 'request.failed']);
    const refused = await app.failure(
      app.webhooks.add(accountId, 'https://hooks.example.com/b', ['request.completed', 'request.finished']),
    );
    expect(refused).toBeInstanceOf(Refused);
    expect(refused.message).toMatch(/^unknown webhook event type "request.finished"; known types: .*request.completed/);
    expect(await app.run(app.webhooks.list(accountId))).toHaveLength(1);
  });

  it("counts the plan's bound: a free account's second endpoint is refused until the first is removed", async () => {
    const app = await start();
    const accountId = await app.account('free');
    const first = await app.run(app.webhooks.add(accountId, 'https://hooks.example.com/1', []));
    const refused = await app.failure(app.webhooks.add(accountId, 'https://hooks.example.com/2', []));
    expect(refused).toBeInstanceOf(AccountLimitReached);
    expect(refused).toMatchObject({ budget: 'webhook_endpoints', limit: 1, count: 1 });
    expect(refused.message).toContain('the free plan allows 1 webhook endpoint');
    const removed = await app.run(app.webhooks.remove(accountId, first.endpoint.endpointId));
    expect(removed.status).toBe('removed');
    // Its secret goes with it; it is no longer listed, and its place is free again.
    expect(await app.store.reads.credential(webhookSecretCredentialKey(first.endpoint.secretId))).toBeUndefined();
    expect(await app.run(app.webhooks.list(accountId))).toEqual([]);
    await app.run(app.webhooks.add(accountId, 'https://hooks.example.com/2', []));
    // Removing it again changes nothing and succeeds (scripts repeat themselves).
    expect((await app.run(app.webhooks.remove(accountId, first.endpoint.endpointId))).status).toBe('removed');
  });

  it('refuses loopback, private and metadata destinations by default, a name resolving to one too', async () => {
    const app = await start();
    const accountId = await app.account('enterprise');
    const problems: Record<string, RegExp> = {
      'https://127.0.0.1/': /^127\.0\.0\.1 is a loopback address; .*webhooks\.allowPrivateNetworks/,
      'https://[::1]:8443/hooks': /^::1 is a loopback address/,
      'https://169.254.169.254/latest': /^169\.254\.169\.254 is a cloud metadata address/,
      'https://192.168.1.10/': /^192\.168\.1\.10 is a private \(RFC 1918\) address/,
      'https://internal.example.com/hooks': /^internal\.example\.com resolves to 10\.1\.2\.3, a private/,
      'https://nowhere.example.com/hooks': /^nowhere\.example\.com could not be resolved \(ENOTFOUND\)/,
    };
    for (const [url, problem] of Object.entries(problems)) {
      const refused = await app.failure(app.webhooks.add(accountId, url, []));
      expect(refused, url).toBeInstanceOf(Refused);
      expect(refused.message, url).toMatch(problem);
    }
    expect(await app.run(app.webhooks.list(accountId))).toEqual([]);
  });

  it('takes private destinations where the operator allows private networks', async () => {
    const app = await start({ webhooks: { allowPrivateNetworks: true } });
    const accountId = await app.account('starter');
    await app.run(app.webhooks.add(accountId, 'https://127.0.0.1:9443/hooks', []));
    app.clock.advance(1);
    await app.run(app.webhooks.add(accountId, 'https://internal.example.com/hooks', []));
    expect((await app.run(app.webhooks.list(accountId))).map((e) => e.url)).toEqual([
      'https://127.0.0.1:9443/hooks',
      'https://internal.example.com/hooks',
    ]);
  });

  it('refuses http:// unless the operator allows it, and URLs with credentials or that are too long', async () => {
    const strict = await start();
    const accountId = await strict.account('starter');
    const http = await strict.failure(strict.webhooks.add(accountId, 'http://hooks.example.com/hooks', []));
    expect(http.message).toBe(
      'a webhook URL must start with https:// (the operator has not allowed http: webhooks.allowHttp)',
    );
    const credentials = await strict.failure(strict.webhooks.add(accountId, 'https://u:p@hooks.example.com/', []));
    expect(credentials.message).toBe('a webhook URL must not contain a user name or password');
    const long = await strict.failure(
      strict.webhooks.add(accountId, `https://hooks.example.com/${'x'.repeat(3_000)}`, []),
    );
    expect(long.message).toMatch(/^a webhook URL has at most 2048 characters/);

    const lax = await start({ webhooks: { allowHttp: true } });
    const other = await lax.account();
    const added = await lax.run(lax.webhooks.add(other, 'http://hooks.example.com/hooks', []));
    expect(added.endpoint.url).toBe('http://hooks.example.com/hooks');
  });

  it('rotates the secret: a new one is shown, and the old one still signs for 24 hours', async () => {
    const app = await start();
    const accountId = await app.account();
    const added = await app.run(app.webhooks.add(accountId, 'https://hooks.example.com/', []));
    app.clock.advance(60_000);
    const rotated = await app.run(app.webhooks.rotateSecret(accountId, added.endpoint.endpointId));
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(added.secret);
    const { endpoint } = rotated;
    expect(endpoint.secretId).not.toBe(added.endpoint.secretId);
    expect(endpoint.previousSecret).toEqual({
      secretId: added.endpoint.secretId,
      validUntil: app.clock.now() + rotationOverlapMs,
    });
    expect(await app.store.reads.credential(webhookSecretCredentialKey(endpoint.secretId))).toBe(rotated.secret);
    expect(await app.store.reads.credential(webhookSecretCredentialKey(added.endpoint.secretId))).toBe(added.secret);
    expect(signingSecretIds(endpoint, app.clock.now() + rotationOverlapMs - 1)).toEqual([
      endpoint.secretId,
      added.endpoint.secretId,
    ]);
    expect(signingSecretIds(endpoint, app.clock.now() + rotationOverlapMs)).toEqual([endpoint.secretId]);
    expect(JSON.stringify(await app.run(app.webhooks.list(accountId)))).not.toContain('whsec_');
  });

  it("answers another account's endpoint and delivery as unknown, and changes nothing of them", async () => {
    const app = await start();
    const owner = await app.account();
    const stranger = await app.account();
    const added = await app.run(app.webhooks.add(owner, 'https://hooks.example.com/', []));
    const { endpointId } = added.endpoint;
    const unknown = `no webhook endpoint ${endpointId}`;
    expect((await app.failure(app.webhooks.remove(stranger, endpointId))).message).toBe(unknown);
    expect((await app.failure(app.webhooks.rotateSecret(stranger, endpointId))).message).toBe(unknown);
    expect((await app.failure(app.webhooks.enable(stranger, endpointId))).message).toBe(unknown);
    expect((await app.failure(app.webhooks.deliveries(stranger, endpointId, { limit: 10 }))).message).toBe(unknown);
    expect(await app.run(app.webhooks.list(stranger))).toEqual([]);
    const reqId = await app.cancelledRequest(owner);
    const deliveryId = app.deliveryOf(reqId, endpointId);
    expect((await app.failure(app.webhooks.redeliver(stranger, deliveryId))).message).toBe(
      `no webhook delivery ${deliveryId}`,
    );
    expect(await app.store.reads.webhookEndpoint(endpointId)).toEqual(added.endpoint);
    // Ids that cannot be ids, and accounts that do not exist, are named as unknown too.
    expect((await app.failure(app.webhooks.remove(owner, 'whep_nope'))).message).toBe('no webhook endpoint whep_nope');
    expect((await app.failure(app.webhooks.redeliver(owner, 'wh_nope'))).message).toBe('no webhook delivery wh_nope');
    expect((await app.failure(app.webhooks.list('acct_AAAAAAAAAAAAAAAA'))).message).toBe(
      'no account acct_AAAAAAAAAAAAAAAA',
    );
  });

  it('pages an endpoint’s deliveries newest first, from a delivery id of the last page', async () => {
    const app = await start();
    const accountId = await app.account();
    const { endpoint } = await app.run(app.webhooks.add(accountId, 'https://hooks.example.com/', []));
    const reqIds: string[] = [];
    for (let n = 0; n < 3; n++) {
      app.clock.advance(1_000);
      reqIds.push(await app.cancelledRequest(accountId));
    }
    const [oldest, middle, newest] = reqIds.map((reqId) => app.deliveryOf(reqId, endpoint.endpointId));
    const first = await app.run(app.webhooks.deliveries(accountId, endpoint.endpointId, { limit: 2 }));
    expect(first.map((d) => d.context.deliveryId)).toEqual([newest, middle]);
    expect(first[0]).toMatchObject({ status: 'waiting', context: { eventType: 'request.cancelled' } });
    const next = await app.run(
      app.webhooks.deliveries(accountId, endpoint.endpointId, { limit: 2, before: middle as string }),
    );
    expect(next.map((d) => d.context.deliveryId)).toEqual([oldest]);
    const none = await app.run(
      app.webhooks.deliveries(accountId, endpoint.endpointId, { limit: 2, before: oldest as string }),
    );
    expect(none).toEqual([]);
    expect((await app.failure(app.webhooks.deliveries(accountId, endpoint.endpointId, { limit: 0 }))).message).toBe(
      'a page of deliveries holds 1 to 100; asked for 0',
    );
    expect(
      (await app.failure(app.webhooks.deliveries(accountId, endpoint.endpointId, { limit: 2, before: 'wh_x' })))
        .message,
    ).toBe('no webhook delivery wh_x');
  });

  it('redelivers a delivered delivery under the same id, due at once, for a new retention', async () => {
    const app = await start();
    const accountId = await app.account();
    const { endpoint } = await app.run(app.webhooks.add(accountId, 'https://hooks.example.com/', []));
    const deliveryId = app.deliveryOf(await app.cancelledRequest(accountId), endpoint.endpointId);
    // What the sender records of a first attempt answered 200.
    await app.send({
      type: 'WebhookDelivery',
      deliveryId,
      command: { type: 'RecordSuccess', outcome: { attempt: 1, status: 200, latencyMs: 4 }, now: app.clock.now() },
    });
    expect((await app.store.reads.webhookDelivery(deliveryId))?.status).toBe('delivered');
    app.clock.advance(3_600_000);
    const redelivered = await app.run(app.webhooks.redeliver(accountId, deliveryId));
    expect(redelivered).toMatchObject({
      status: 'waiting',
      context: {
        deliveryId,
        redeliveries: 1,
        availableAt: app.clock.now(),
        giveUpAt: app.clock.now() + webhookRetentionMs(app.config.webhooks),
      },
    });
    // Due again already: a second redelivery changes nothing.
    expect((await app.run(app.webhooks.redeliver(accountId, deliveryId))).context.redeliveries).toBe(1);
  });

  it('enables an endpoint disabled after failing for 3 days; enabling an enabled one changes nothing', async () => {
    const app = await start();
    const accountId = await app.account();
    const { endpoint } = await app.run(app.webhooks.add(accountId, 'https://hooks.example.com/', []));
    const { endpointId } = endpoint;
    expect(await app.run(app.webhooks.enable(accountId, endpointId))).toEqual(endpoint);
    const deliveryId = app.deliveryOf(await app.cancelledRequest(accountId), endpointId);
    // The sender's record: one failed attempt now, then the delivery given up at its 72 hours' retention.
    await app.send({
      type: 'WebhookDelivery',
      deliveryId,
      command: {
        type: 'RecordFailure',
        outcome: { attempt: 1, status: 500, latencyMs: 3, error: 'answered 500' },
        policy: defaultWebhookBackoff,
        random: 0.5,
        now: app.clock.now(),
      },
    });
    app.clock.advance(webhookRetentionMs(app.config.webhooks));
    await app.send({ type: 'WebhookDelivery', deliveryId, command: { type: 'GiveUp', now: app.clock.now() } });
    expect((await app.store.reads.webhookEndpoint(endpointId))?.status).toBe('disabled');
    const refused = await app.failure(app.webhooks.redeliver(accountId, deliveryId));
    expect(refused.message).toBe(`delivery ${deliveryId}: its endpoint is disabled; enable it first`);

    const enabled = await app.run(app.webhooks.enable(accountId, endpointId));
    expect(enabled.status).toBe('enabled');
    expect(enabled.failingSince).toBeUndefined();
    expect((await app.run(app.webhooks.redeliver(accountId, deliveryId))).status).toBe('waiting');
  });
});
