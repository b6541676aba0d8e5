import { Effect } from 'effect';
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/config.js';
import { ManualClock } from '../../src/ports/Clock.js';
import { unusedPort } from '../support/ports.js';
import { type Answer, type Posted, type ScriptedReceiver, startScriptedReceiver } from '../support/scriptedReceiver.js';
import { submit } from '../support/submit.js';
import { eventually, type TestApp, type TestConfig, testApps } from '../support/testApp.js';
import { addWebhookEndpoint } from '../support/webhookEndpoints.js';

// Issue 42, "webhooks after an outage": a receiver down, then up. Real sockets (a receiver on 127.0.0.1 that is
// closed and started again on its port), the whole app in-process, on a clock the test moves (simulated time, as the
// issue 30 sender tests do): the retries' backoff is in that time, so a delivery that arrives while it stands still
// arrived ahead of its backoff.

const echo: ModelConfig = { id: 'echo', provider: 'echo', delayMs: 0, timeoutMs: 120_000 };
const perEndpoint = 4;
const webhooks: TestConfig['webhooks'] = {
  allowHttp: true,
  allowPrivateNetworks: true,
  retentionHours: 72,
  maxInFlight: 16,
  maxInFlightPerEndpoint: perEndpoint,
  maxInFlightPerAccount: 8,
};
const hourMs = 3_600_000;

const receivers: ScriptedReceiver[] = [];
const receiverOn = async (port: number, answer?: (post: Posted, index: number) => Answer) => {
  const started = await startScriptedReceiver({ port, answer });
  receivers.push(started);
  return started;
};
afterEach(async () => {
  for (const one of receivers.splice(0)) await one.close();
});

const start = testApps();

const deliveriesOf = (app: TestApp, endpointId: string) =>
  app.store.reads.webhookDeliveriesOf(endpointId, { limit: 100 });

describe.each(['memory', 'lmdb', 'postgres'] as const)('Webhooks after an outage on the %s store', (store) => {
  const startApp = (clock: ManualClock, retentionHours = 72) =>
    start({
      clock,
      store,
      config: { models: [echo], webhooks: { ...webhooks, retentionHours } },
      sweepIntervalMs: 50,
    });

  it('sends every waiting delivery as soon as the receiver answers again, no more than the endpoint’s bound at once, not after their backoff', async () => {
    const port = await unusedPort();
    const clock = new ManualClock(Date.now());
    const app = await startApp(clock);
    const account = await app.account('scale');
    const { endpointId } = await addWebhookEndpoint(app, {
      accountId: account.accountId,
      url: `http://127.0.0.1:${port}/hooks`,
    });
    // The receiver is down (nothing listens on its port): 12 requests end, each delivery fails its attempts while
    // the clock moves on, so that their backoff grows.
    const waiting = 12;
    for (let i = 0; i < waiting; i++) await submit(app, account.key, { prompt: `outage ${i}` });
    for (let attempts = 1; attempts <= 3; attempts++) {
      await eventually(async () => {
        const found = await deliveriesOf(app, endpointId);
        return found.length === waiting && found.every((d) => d.status === 'waiting' && d.context.attempts >= attempts)
          ? true
          : undefined;
      }, 20_000);
      if (attempts < 3) {
        clock.advance(hourMs);
        app.webhookSender.wake();
      }
    }
    const before = await deliveriesOf(app, endpointId);
    const now = clock.now();
    expect(before.every((d) => d.context.availableAt > now)).toBe(true);
    const endpoint = await app.store.reads.webhookEndpoint(endpointId);
    expect(endpoint?.failingSince).toBeDefined();
    expect(await app.store.reads.webhookBacklog(endpointId, 1_000)).toMatchObject({ waiting, truncated: false });

    // The receiver is up again, slow enough that posts overlap. The clock stands still from here on: nothing waiting
    // is due by its backoff. A new request's delivery is the first success, and brings every waiting one with it.
    const receiver = await receiverOn(port, () => ({ status: 200, delayMs: 40 }));
    const fresh = await submit(app, account.key, { prompt: 'back again' });
    await eventually(async () => {
      const found = await deliveriesOf(app, endpointId);
      return found.length === waiting + 1 && found.every((d) => d.status === 'delivered') ? true : undefined;
    }, 20_000);
    expect(clock.now()).toBe(now);
    expect(receiver.to('/hooks').length).toBe(waiting + 1);
    expect(receiver.to('/hooks').some((post) => post.body.includes(fresh))).toBe(true);
    expect(receiver.mostOpen('/hooks')).toBeLessThanOrEqual(perEndpoint);
    expect(receiver.mostOpen('/hooks')).toBeGreaterThan(1);
    const recovered = await app.store.reads.webhookEndpoint(endpointId);
    expect(recovered?.failingSince).toBeUndefined();
    expect(recovered?.recoveredFrom).toBe(endpoint?.failingSince);
    // Every attempt is in each delivery's log: three refused connections, then the answer.
    const shown = (await deliveriesOf(app, endpointId)).find((d) => d.context.attempts === 4);
    expect(shown?.context.recentAttempts?.map((a) => a.status ?? a.error)).toEqual([
      expect.stringMatching(/could not deliver|ECONNREFUSED/),
      expect.stringMatching(/could not deliver|ECONNREFUSED/),
      expect.stringMatching(/could not deliver|ECONNREFUSED/),
      200,
    ]);
    expect(await app.store.reads.webhookBacklog(endpointId, 1_000)).toEqual({ waiting: 0, truncated: false });
  }, 120_000);

  it('recovers the deliveries that gave up for events since a time, and no others', async () => {
    const port = await unusedPort();
    const clock = new ManualClock(Date.now());
    // A day's retention: the deliveries give up before 3 days of failures would disable the endpoint.
    const retentionHours = 24;
    const app = await startApp(clock, retentionHours);
    const account = await app.account('scale');
    const { endpointId } = await addWebhookEndpoint(app, {
      accountId: account.accountId,
      url: `http://127.0.0.1:${port}/hooks`,
    });
    // Two requests end two hours apart while the receiver is down; both deliveries give up at their retention.
    const early = await submit(app, account.key, { prompt: 'early' });
    await eventually(async () => ((await deliveriesOf(app, endpointId))[0]?.context.attempts ? true : undefined));
    clock.advance(2 * hourMs);
    const since = clock.now();
    const late = await submit(app, account.key, { prompt: 'late' });
    await eventually(async () => {
      const found = await deliveriesOf(app, endpointId);
      return found.length === 2 && found.every((d) => d.context.attempts >= 1) ? true : undefined;
    }, 20_000);
    clock.advance((retentionHours + 1) * hourMs);
    app.webhookSender.wake();
    await eventually(async () => {
      const found = await deliveriesOf(app, endpointId);
      return found.every((d) => d.status === 'gave_up') ? true : undefined;
    }, 20_000);
    // Up again; the endpoint is still enabled (its failures lasted less than 3 days).
    const receiver = await receiverOn(port);
    const endpoint = await app.store.reads.webhookEndpoint(endpointId);
    expect(endpoint?.status).toBe('enabled');
    const recovered = await Effect.runPromise(app.webhooks.recover(undefined, endpointId, since));
    expect(recovered).toEqual({ redelivered: 1, scanned: 1, more: false });
    await eventually(() => (receiver.to('/hooks').length === 1 ? true : undefined), 20_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.to('/hooks')).toHaveLength(1);
    expect(receiver.to('/hooks')[0]?.body).toContain(late);
    const byData = new Map((await deliveriesOf(app, endpointId)).map((d) => [d.context.dataId, d.status]));
    expect(byData.get(early)).toBe('gave_up');
    await eventually(async () => {
      const found = await deliveriesOf(app, endpointId);
      return found.find((d) => d.context.dataId === late)?.status === 'delivered' ? true : undefined;
    });
    // Another account's id is refused as before; a second recover finds nothing more to send.
    const stranger = await app.account('scale');
    const refused = await Effect.runPromise(Effect.flip(app.webhooks.recover(stranger.accountId, endpointId, since)));
    expect(refused.message).toBe(`no webhook endpoint ${endpointId}`);
    expect(await Effect.runPromise(app.webhooks.recover(account.accountId, endpointId, 0))).toMatchObject({
      redelivered: 1,
      scanned: 2,
    });
  }, 120_000);
});
