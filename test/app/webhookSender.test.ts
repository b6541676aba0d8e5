import { Effect } from 'effect';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultSendTimeoutMs } from '../../src/adapters/webhooks/sender.js';
import type { Principal } from '../../src/app/Auth.js';
import { defaultConfig, type ModelConfig } from '../../src/config.js';
import { type ClockShape, ManualClock, systemClock } from '../../src/ports/Clock.js';
import { batchWhen, chatLines, createBatch, isEnded, uploadLines } from '../support/batches.js';
import { withLmdbStore } from '../support/lmdbData.js';
import { unusedPort } from '../support/ports.js';
import { call } from '../support/processes.js';
import { type Answer, type Posted, type ScriptedReceiver, startScriptedReceiver } from '../support/scriptedReceiver.js';
import { submit } from '../support/submit.js';
import { eventually, listen, type TestApp, type TestConfig, testApps } from '../support/testApp.js';
import type { StoreKind } from '../support/testStore.js';
import { addWebhookEndpoint, removeWebhookEndpoint, rotateWebhookSecret } from '../support/webhookEndpoints.js';

// Issue 30, the sender: what a request's ending makes due is posted to the account's endpoint, signed, verified by
// the official `openai` SDK, retried under the same `webhook-id`, bounded per endpoint, and never in anyone's way.
// Real sockets (a receiver on 127.0.0.1), the whole app in-process.

const echo = (id: string, delayMs: number): ModelConfig => ({ id, provider: 'echo', delayMs, timeoutMs: 120_000 });

const receivers: ScriptedReceiver[] = [];
const receiver = async (answer?: (post: Posted, index: number) => Answer) => {
  const started = await startScriptedReceiver({ answer });
  receivers.push(started);
  return started;
};
afterEach(async () => {
  for (const one of receivers.splice(0)) await one.close();
});

const start = testApps();

const webhookConfig = (webhooks: Partial<TestConfig['webhooks']> = {}): TestConfig['webhooks'] => ({
  allowHttp: true,
  allowPrivateNetworks: true,
  retentionHours: 72,
  maxInFlight: 16,
  maxInFlightPerEndpoint: 4,
  maxInFlightPerAccount: 8,
  ...webhooks,
});

/** An app on a store of `kind` (or on the store of `storeOf`: a second server on it). */
const appsOn =
  (kind: StoreKind) =>
  async (
    options: {
      readonly clock?: ClockShape;
      readonly webhooks?: Partial<TestConfig['webhooks']>;
      readonly config?: TestConfig;
      readonly sweepIntervalMs?: number;
      readonly storeOf?: TestApp;
    } = {},
  ) =>
    start({
      clock: options.clock ?? systemClock,
      store: kind,
      storeOf: options.storeOf,
      sweepIntervalMs: options.sweepIntervalMs,
      config: {
        models: [echo('echo', 0), echo('slow', 60_000)],
        ...options.config,
        webhooks: webhookConfig(options.webhooks),
      },
    });

/** What the tests submit: the prompt says nothing, the model decides how the request ends. */
const hooked = { prompt: 'hello hooks' };

const principalOf = (account: { accountId: string; keyId: string }): Principal =>
  ({ accountId: account.accountId, keyId: account.keyId, plan: 'scale' }) as Principal;

const unwrap = (secret: string, post: Posted) =>
  new OpenAI({ apiKey: 'x', webhookSecret: secret }).webhooks.unwrap(post.body, post.headers as Record<string, string>);

const headerOf = (post: Posted, name: string) => post.headers[name] as string;

describe.each(['memory', 'lmdb'] as const)('The webhook sender on the %s store', (kind) => {
  const startApp = appsOn(kind);

  it('posts every event a request ending makes (request.* and, through the Responses face, response.*), each verified by the openai SDK, with the delivery id as webhook-id', async () => {
    const hooks = await receiver();
    const closed = await unusedPort();
    const app = await startApp({
      sweepIntervalMs: 50,
      config: {
        requestTtlSeconds: 2,
        processing: { maxAttempts: 1 },
        models: [
          echo('echo', 0),
          echo('slow', 60_000),
          {
            id: 'down',
            provider: 'openai',
            baseUrl: `http://127.0.0.1:${closed}/v1`,
            upstreamModel: 'm',
            timeoutMs: 5_000,
            maxRetries: 0,
          },
        ],
      },
    });
    const account = await app.account('scale');
    const { secret, endpointId } = await addWebhookEndpoint(app, {
      accountId: account.accountId,
      url: hooks.url('/hooks'),
    });
    const completed = await submit(app, account.key, { ...hooked, model: 'echo' });
    const failed = await submit(app, account.key, { ...hooked, model: 'down' });
    const cancelled = await submit(app, account.key, { ...hooked, model: 'slow' });
    await app.requests.cancel(principalOf(account), cancelled);
    const expired = await submit(app, account.key, { ...hooked, model: 'slow' });
    // Made through the Responses face: `response.*` (data.id `resp_…`) beside `request.*`.
    const respond = async (model: string) => {
      const answer = await app.call('POST', '/v1/responses', {
        key: account.key,
        body: { model, input: 'hello hooks', background: true },
      });
      expect(answer.status).toBe(200);
      const id = ((await answer.json()) as { id: string }).id;
      return { id, reqId: `req_${id.slice('resp_'.length)}` };
    };
    const responded = await respond('echo');
    const responseFailed = await respond('down');
    const responseCancelled = await respond('slow');
    await app.requests.cancel(principalOf(account), responseCancelled.reqId);

    await eventually(() => (hooks.posted.length >= 10 ? true : undefined), 15_000);
    const events = await Promise.all(hooks.posted.map((post) => unwrap(secret, post)));
    const made = events.map((event) => `${event.type} ${(event as { data: { id: string } }).data.id}`).sort();
    expect(made).toEqual(
      [
        `request.completed ${completed}`,
        `request.failed ${failed}`,
        `request.cancelled ${cancelled}`,
        `request.expired ${expired}`,
        `response.completed ${responded.id}`,
        `request.completed ${responded.reqId}`,
        `response.failed ${responseFailed.id}`,
        `request.failed ${responseFailed.reqId}`,
        `response.cancelled ${responseCancelled.id}`,
        `request.cancelled ${responseCancelled.reqId}`,
      ].sort(),
    );
    for (const [i, post] of hooks.posted.entries()) {
      const event = events[i] as { id: string; object: string };
      expect(event.object).toBe('event');
      // The webhook-id is the delivery's own id; the body's id is the event's.
      const delivery = await app.store.reads.webhookDelivery(headerOf(post, 'webhook-id'));
      expect(delivery?.context).toMatchObject({ endpointId, eventId: event.id });
      expect(headerOf(post, 'webhook-signature')).toMatch(/^v1,[A-Za-z0-9+/=]+$/);
    }
    await eventually(async () => {
      const deliveries = hooks.posted.map((post) => app.store.reads.webhookDelivery(headerOf(post, 'webhook-id')));
      return (await Promise.all(deliveries)).every((delivery) => delivery?.status === 'delivered') ? true : undefined;
    });
    // Once each: nothing is sent twice when every attempt succeeded.
    expect(new Set(hooks.posted.map((post) => headerOf(post, 'webhook-id'))).size).toBe(10);
  });

  it("posts a batch's ending: batch.completed, batch.failed (its file refused) and batch.cancelled, none per line", async () => {
    const hooks = await receiver();
    const app = await startApp({ config: { processing: { maxAttempts: 1 } } });
    const served = await listen(app);
    try {
      const account = await app.account('scale');
      const { secret } = await addWebhookEndpoint(app, { accountId: account.accountId, url: hooks.url('/batches') });
      const batchOf = async (lines: readonly unknown[]) =>
        (await createBatch(served.url, account.key, await uploadLines(served.url, account.key, lines))).id;
      const completed = await batchOf(chatLines('echo', ['one', 'two']));
      const failed = await batchOf([{ custom_id: 'bad', method: 'POST', url: '/v1/nowhere', body: {} }]);
      const cancelled = await batchOf(chatLines('slow', ['waits']));
      await batchWhen(served.url, account.key, cancelled, (batch) => batch.status === 'in_progress');
      await call(served.url, 'POST', `/v1/batches/${cancelled}/cancel`, account.key);
      for (const id of [completed, failed, cancelled]) await batchWhen(served.url, account.key, id, isEnded);
      await eventually(() => (hooks.posted.length >= 3 ? true : undefined), 10_000);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const events = await Promise.all(hooks.posted.map((post) => unwrap(secret, post)));
      expect(events.map((event) => `${event.type} ${(event as { data: { id: string } }).data.id}`).sort()).toEqual(
        [`batch.completed ${completed}`, `batch.failed ${failed}`, `batch.cancelled ${cancelled}`].sort(),
      );
    } finally {
      await served.close();
    }
  });

  it('posts batch.expired for a batch whose window closed before its lines ran, verified by the openai SDK', async () => {
    const hooks = await receiver();
    // One worker, 700 ms a line, a 2 s window: the batch ends expired with lines never started.
    const app = await startApp({
      config: {
        models: [{ id: 'slowish', provider: 'echo', delayMs: 700, timeoutMs: 60_000 }],
        processing: { concurrency: 1 },
        batches: { ...defaultConfig().batches, windowSeconds: 2 },
      },
    });
    const served = await listen(app);
    try {
      const account = await app.account('scale');
      const { secret } = await addWebhookEndpoint(app, { accountId: account.accountId, url: hooks.url('/expiry') });
      const lines = chatLines('slowish', ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']);
      const batchId = (await createBatch(served.url, account.key, await uploadLines(served.url, account.key, lines)))
        .id;
      const ended = await batchWhen(served.url, account.key, batchId, isEnded);
      expect(ended.status).toBe('expired');
      const [post] = await eventually(() => (hooks.to('/expiry').length > 0 ? hooks.to('/expiry') : undefined), 10_000);
      await expect(unwrap(secret, post as Posted)).resolves.toMatchObject({
        type: 'batch.expired',
        data: { id: batchId },
      });
      // One event for the batch, none for its lines.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(hooks.to('/expiry')).toHaveLength(1);
    } finally {
      await served.close();
    }
  });

  it('signs what the SDK refuses once the body is changed, or once the timestamp is old', async () => {
    const hooks = await receiver();
    // This app's clock runs ten minutes behind: every signature it makes is ten minutes old when it arrives.
    const behind = new ManualClock(Date.now() - 10 * 60_000);
    const late = await startApp({ clock: behind });
    const app = await startApp();
    for (const one of [app, late]) {
      const account = await one.account('scale');
      const endpoint = await addWebhookEndpoint(one, {
        accountId: account.accountId,
        url: hooks.url(`/${one === app ? 'now' : 'late'}`),
      });
      await submit(one, account.key, hooked);
      const [post] = await eventually(() =>
        hooks.to(one === app ? '/now' : '/late').length > 0 ? hooks.to(one === app ? '/now' : '/late') : undefined,
      );
      const arrived = post as Posted;
      if (one === app) {
        await expect(unwrap(endpoint.secret, arrived)).resolves.toMatchObject({ type: 'request.completed' });
        const tampered = { ...arrived, body: arrived.body.replace('request.completed', 'request.failed') };
        await expect(unwrap(endpoint.secret, tampered)).rejects.toThrow(/signature/i);
      } else {
        await expect(unwrap(endpoint.secret, arrived)).rejects.toThrow(/too old/i);
      }
    }
  });

  it('retries a delivery the receiver answered 500 and delivers it under the same webhook-id', async () => {
    const hooks = await receiver((_post, index) => (index === 0 ? 500 : 200));
    const clock = new ManualClock(Date.now());
    const app = await startApp({ clock });
    const account = await app.account('scale');
    const { secret } = await addWebhookEndpoint(app, {
      accountId: account.accountId,
      url: hooks.url('/flaky'),
    });
    await submit(app, account.key, hooked);
    await eventually(() => (hooks.posted.length === 1 ? true : undefined));
    const id = headerOf(hooks.posted[0] as Posted, 'webhook-id');
    await eventually(async () =>
      (await app.store.reads.webhookDelivery(id))?.context.lastStatus === 500 ? true : undefined,
    );
    const failed = await app.store.reads.webhookDelivery(id);
    expect(failed).toMatchObject({ status: 'waiting', context: { attempts: 1, lastError: 'answered 500' } });
    // Not retried before its time: the backoff's floor is 1 s, its first ceiling 5 s.
    const retryAt = failed?.context.availableAt as number;
    expect(retryAt - clock.now()).toBeGreaterThanOrEqual(1_000);
    expect(retryAt - clock.now()).toBeLessThanOrEqual(5_000);
    app.webhookSender.wake();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(hooks.posted).toHaveLength(1);
    clock.set(retryAt);
    app.webhookSender.wake();
    await eventually(async () =>
      (await app.store.reads.webhookDelivery(id))?.status === 'delivered' ? true : undefined,
    );
    expect(hooks.posted.map((post) => headerOf(post, 'webhook-id'))).toEqual([id, id]);
    expect((await app.store.reads.webhookDelivery(id))?.context).toMatchObject({ attempts: 2, lastStatus: 200 });
    const [first, second] = hooks.posted as [Posted, Posted];
    // The same bytes, signed anew at each attempt's time; both verify.
    expect(second.body).toBe(first.body);
    await expect(unwrap(secret, second)).resolves.toMatchObject({ type: 'request.completed' });
  });

  it("a hanging receiver of one account holds one place, and delays neither another account's deliveries nor a submit", async () => {
    const hooks = await receiver((post) => (post.path === '/hang' ? 'hang' : 200));
    const app = await startApp({ webhooks: { maxInFlight: 8, maxInFlightPerEndpoint: 2 } });
    const stuck = await app.account('scale');
    const other = await app.account('scale');
    await addWebhookEndpoint(app, { accountId: stuck.accountId, url: hooks.url('/hang') });
    await addWebhookEndpoint(app, { accountId: other.accountId, url: hooks.url('/ok') });
    // More deliveries for the hanging endpoint than the whole sender has places.
    for (let i = 0; i < 12; i++) await submit(app, stuck.key, hooked);
    await eventually(() => (hooks.open('/hang') === 1 ? true : undefined));
    // The first hanging post ends only at the sender's bound (10 s), and the next starts then: while it is the only
    // one and still open, nothing has waited for it.
    const firstStillHangs = () => hooks.to('/hang').length === 1 && hooks.open('/hang') === 1;
    const reqId = await submit(app, other.key, hooked);
    expect(firstStillHangs()).toBe(true);
    await eventually(() => (hooks.to('/ok').length === 1 ? true : undefined), 2 * defaultSendTimeoutMs);
    expect(firstStillHangs()).toBe(true);
    expect(JSON.parse((hooks.to('/ok')[0] as Posted).body)).toMatchObject({ data: { id: reqId } });
    // An endpoint that never answered holds one place (issue 40), however many deliveries it has due.
    expect(hooks.mostOpen('/hang')).toBe(1);
    await eventually(() => (app.webhookSender.inFlight() === 1 ? true : undefined));
  });

  it('signs with both secrets during a rotation, and each verifies', async () => {
    const hooks = await receiver();
    const app = await startApp();
    const account = await app.account('scale');
    const old = await addWebhookEndpoint(app, { accountId: account.accountId, url: hooks.url('/rotated') });
    const rotated = await rotateWebhookSecret(app, { accountId: account.accountId, endpointId: old.endpointId });
    await submit(app, account.key, hooked);
    const post = await eventually(() => hooks.posted[0]);
    const signatures = headerOf(post, 'webhook-signature').split(' ');
    expect(signatures).toHaveLength(2);
    await expect(unwrap(old.secret, post)).resolves.toMatchObject({ type: 'request.completed' });
    await expect(unwrap(rotated.secret, post)).resolves.toMatchObject({ type: 'request.completed' });
    // Each signature alone is one secret's.
    for (const [i, secret] of [rotated.secret, old.secret].entries())
      await expect(
        unwrap(secret, { ...post, headers: { ...post.headers, 'webhook-signature': signatures[i] } }),
      ).resolves.toBeDefined();
  });

  it('never has more than maxInFlightPerEndpoint posts open at one endpoint, and delivers them all', async () => {
    const hooks = await receiver(() => ({ status: 200, delayMs: 150 }));
    const app = await startApp({ webhooks: { maxInFlight: 16, maxInFlightPerEndpoint: 3 } });
    const account = await app.account('scale');
    await addWebhookEndpoint(app, { accountId: account.accountId, url: hooks.url('/slow') });
    const reqIds = [];
    for (let i = 0; i < 12; i++) reqIds.push(await submit(app, account.key, hooked));
    await eventually(() => (hooks.posted.length === 12 ? true : undefined), 10_000);
    expect(hooks.mostOpen('/slow')).toBe(3);
    expect(new Set(hooks.posted.map((post) => JSON.parse(post.body).data.id))).toEqual(new Set(reqIds));
  });

  it('gives up the deliveries of a removed endpoint instead of sending them', async () => {
    const closed = await unusedPort();
    const clock = new ManualClock(Date.now());
    const app = await startApp({ clock });
    const account = await app.account('scale');
    const { endpointId } = await addWebhookEndpoint(app, {
      accountId: account.accountId,
      url: `http://127.0.0.1:${closed}/gone`,
    });
    await submit(app, account.key, hooked);
    const [delivery] = await eventually(async () => {
      const found = await app.store.reads.webhookDeliveriesOf(endpointId, { limit: 10 });
      return found[0]?.context.attempts === 1 && found[0].status === 'waiting' ? found : undefined;
    });
    expect(delivery?.context.lastError).toMatch(/could not deliver|ECONNREFUSED/);
    await removeWebhookEndpoint(app, { accountId: account.accountId, endpointId });
    clock.advance(6_000);
    app.webhookSender.wake();
    const deliveryId = delivery?.context.deliveryId as string;
    const gaveUp = await eventually(async () => {
      const state = await app.store.reads.webhookDelivery(deliveryId);
      return state?.status === 'gave_up' ? state : undefined;
    });
    expect(gaveUp.context).toMatchObject({ gaveUpReason: 'endpoint_removed', attempts: 1 });
  });

  it('gives a delivery up, sending nothing, once its retention passed while it waited', async () => {
    const closed = await unusedPort();
    const clock = new ManualClock(Date.now());
    const app = await startApp({ clock });
    const account = await app.account('scale');
    const { endpointId } = await addWebhookEndpoint(app, {
      accountId: account.accountId,
      url: `http://127.0.0.1:${closed}/down`,
    });
    await submit(app, account.key, hooked);
    const waiting = await eventually(async () => {
      const [found] = await app.store.reads.webhookDeliveriesOf(endpointId, { limit: 1 });
      return found?.context.attempts === 1 && found.status === 'waiting' ? found : undefined;
    });
    // The server was away for the whole retention (72 hours): no attempt is made past it.
    clock.set(waiting.context.giveUpAt);
    app.webhookSender.wake();
    const gaveUp = await eventually(async () => {
      const state = await app.store.reads.webhookDelivery(waiting.context.deliveryId);
      return state?.status === 'gave_up' ? state : undefined;
    });
    expect(gaveUp.context).toMatchObject({ gaveUpReason: 'retention', attempts: 1 });
  });

  it('disables an endpoint that failed for 3 days, sends it nothing new until it is enabled, then delivers and redelivers', async () => {
    let healthy = false;
    const hooks = await receiver(() => (healthy ? 200 : 500));
    const clock = new ManualClock(Date.now());
    const app = await startApp({ clock });
    const account = await app.account('scale');
    const { endpointId } = await addWebhookEndpoint(app, { accountId: account.accountId, url: hooks.url('/down') });
    await submit(app, account.key, hooked);
    const failing = await eventually(async () => {
      const [found] = await app.store.reads.webhookDeliveriesOf(endpointId, { limit: 1 });
      return found?.context.attempts === 1 && found.status === 'waiting' ? found : undefined;
    });
    expect((await app.store.reads.webhookEndpoint(endpointId))?.failingSince).toBeDefined();
    // Three days of failures (the retention, 72 hours, runs out with them): the endpoint is disabled.
    clock.set(failing.context.giveUpAt);
    app.webhookSender.wake();
    await eventually(async () =>
      (await app.store.reads.webhookEndpoint(endpointId))?.status === 'disabled' ? true : undefined,
    );
    expect(await app.store.reads.webhookDelivery(failing.context.deliveryId)).toMatchObject({ status: 'gave_up' });
    // Disabled: an ending makes no delivery for it, and the receiver (healthy again) hears nothing.
    healthy = true;
    const posts = hooks.posted.length;
    await submit(app, account.key, hooked);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await app.store.reads.webhookDeliveriesOf(endpointId, { limit: 10 })).toHaveLength(1);
    expect(hooks.posted).toHaveLength(posts);
    // Enabled: the next ending is delivered, and the given-up one comes back by redelivery, same webhook-id.
    await Effect.runPromise(app.webhooks.enable(account.accountId, endpointId));
    const later = await submit(app, account.key, hooked);
    await eventually(() => (hooks.posted.some((post) => post.body.includes(later)) ? true : undefined));
    await Effect.runPromise(app.webhooks.redeliver(account.accountId, failing.context.deliveryId));
    await eventually(async () =>
      (await app.store.reads.webhookDelivery(failing.context.deliveryId))?.status === 'delivered' ? true : undefined,
    );
    expect(hooks.posted.filter((post) => headerOf(post, 'webhook-id') === failing.context.deliveryId).length).toBe(2);
  });

  it('two servers on one store send each delivery once: the attempt is leased in the write', async () => {
    const hooks = await receiver(() => ({ status: 200, delayMs: 50 }));
    const first = await startApp();
    const both = [first, await startApp({ storeOf: first })];
    const [one, two] = both as [TestApp, TestApp];
    const account = await one.account('scale');
    await addWebhookEndpoint(one, { accountId: account.accountId, url: hooks.url('/shared') });
    const reqIds = [];
    for (let i = 0; i < 20; i++) reqIds.push(await submit(i % 2 === 0 ? one : two, account.key, hooked));
    await eventually(() => (hooks.posted.length >= 20 ? true : undefined), 10_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hooks.posted).toHaveLength(20);
    expect(new Set(hooks.posted.map((post) => headerOf(post, 'webhook-id'))).size).toBe(20);
  });

  it('a draining server finishes the posts in flight and records them', async () => {
    const hooks = await receiver(() => ({ status: 200, delayMs: 400 }));
    const app = await startApp();
    const account = await app.account('scale');
    await addWebhookEndpoint(app, { accountId: account.accountId, url: hooks.url('/slow') });
    await submit(app, account.key, hooked);
    await eventually(() => (hooks.open('/slow') === 1 ? true : undefined));
    expect(await app.drain(5_000)).toBe(true);
    const id = headerOf(hooks.posted[0] as Posted, 'webhook-id');
    expect((await app.store.reads.webhookDelivery(id))?.status).toBe('delivered');
  });

  // The test's whole time is shorter than a post's bound (10 s): had the close waited the hanging post out, the test
  // would time out, so the close returning at all is returning before the post ended.
  it('a closing server leaves a hanging post at once, unrecorded', {
    timeout: defaultSendTimeoutMs - 1_000,
  }, async () => {
    const hooks = await receiver(() => 'hang');
    const closing = await startApp();
    const other = await closing.account('scale');
    await addWebhookEndpoint(closing, { accountId: other.accountId, url: hooks.url('/hang') });
    await submit(closing, other.key, hooked);
    await eventually(() => (hooks.open('/hang') === 1 ? true : undefined));
    const hanging = headerOf(hooks.to('/hang')[0] as Posted, 'webhook-id');
    await closing.close();
    // Not waited out: nothing is recorded, the lease lapses, a restart sends it again.
    const left = await (async () => {
      const closed = closing.testStore;
      if (closed.kind === 'memory') return closed.memory.reads.webhookDelivery(hanging);
      return withLmdbStore(closing.dataDir, (reopened) => reopened.reads.webhookDelivery(hanging));
    })();
    expect(left?.status).toBe('sending');
  });
});
