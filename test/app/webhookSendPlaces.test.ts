import { afterEach, describe, expect, it } from 'vitest';
import { defaultSendTimeoutMs } from '../../src/adapters/webhooks/sender.js';
import { slowAnswerMs } from '../../src/app/webhooks/sendPlaces.js';
import { createWebhookSender } from '../../src/app/webhooks/WebhookSender.js';
import { ManualClock } from '../../src/ports/Clock.js';
import { silentLogger } from '../../src/ports/Logger.js';
import type { WebhookPost, WebhookPostResult } from '../../src/ports/WebhookTransport.js';
import { submit } from '../support/submit.js';
import { eventually, type TestApp, testApps } from '../support/testApp.js';
import { addWebhookEndpoint } from '../support/webhookEndpoints.js';

// Issue 40, finding 6: the sender's places, in simulated time. The app (memory store) makes deliveries due; a sender
// of the test's own takes them, over a transport whose posts stay open until the test ends them (as an answer, or as
// the 10 s bound's timeout), so "while the hanging posts are still open" is a fact of the test, not a race with a
// clock. The real transport and `airs serve` are test/integration/abuseWebhooks.test.ts.

const bounds = { maxInFlight: 16, maxInFlightPerEndpoint: 4, maxInFlightPerAccount: 8 } as const;
/** Half of maxInFlight: what endpoints that do not answer may hold together. */
const unansweredPlaces = bounds.maxInFlight / 2;

type OpenPost = { readonly url: string; readonly deliveryId: string; answer(result: WebhookPostResult): void };

/** A transport whose posts the test answers: every post stays open until `answer`, or answers at once by `auto`. */
const scriptedTransport = (auto: (url: string) => WebhookPostResult | undefined) => {
  const open = new Map<string, OpenPost>();
  const posted: { readonly url: string; readonly deliveryId: string }[] = [];
  let mostOpen = 0;
  const mostOpenAt = new Map<string, number>();
  const openAt = (url: string) => [...open.values()].filter((post) => post.url === url).length;
  const transport = (post: WebhookPost): Promise<WebhookPostResult> => {
    const deliveryId = post.headers['webhook-id'] as string;
    posted.push({ url: post.url, deliveryId });
    const now = auto(post.url);
    if (now !== undefined) return Promise.resolve(now);
    return new Promise((resolve) => {
      open.set(deliveryId, {
        url: post.url,
        deliveryId,
        answer: (result) => {
          open.delete(deliveryId);
          resolve(result);
        },
      });
      mostOpen = Math.max(mostOpen, open.size);
      mostOpenAt.set(post.url, Math.max(mostOpenAt.get(post.url) ?? 0, openAt(post.url)));
    });
  };
  return {
    transport,
    posted,
    open: () => [...open.values()],
    /** The most posts open at once, in all or to one URL. */
    mostOpen: (url?: string) => (url === undefined ? mostOpen : (mostOpenAt.get(url) ?? 0)),
    resetMostOpen: () => {
      mostOpen = open.size;
      mostOpenAt.clear();
    },
  };
};

const delivered = (latencyMs: number): WebhookPostResult => ({
  delivered: true,
  status: 200,
  latencyMs,
  error: undefined,
});
const timedOut: WebhookPostResult = {
  delivered: false,
  status: undefined,
  latencyMs: defaultSendTimeoutMs,
  error: `no answer within ${defaultSendTimeoutMs} ms`,
};

const start = testApps();
const senders: { stop(): Promise<void> }[] = [];
afterEach(async () => {
  for (const sender of senders.splice(0)) await sender.stop();
});

/** An app whose own sender takes nothing, and a sender of the test's over `transport`, on the app's store. */
const appWithSender = async (transport: ReturnType<typeof scriptedTransport>['transport']) => {
  const clock = new ManualClock(Date.now());
  const app = await start({
    clock,
    store: 'memory',
    config: {
      models: [{ id: 'echo', provider: 'echo', delayMs: 0, timeoutMs: 60_000 }],
      webhooks: {
        allowHttp: true,
        allowPrivateNetworks: true,
        retentionHours: 72,
        ...bounds,
      },
    },
  });
  app.webhookSender.stopTakingWork();
  // The endpoint views the sender reads, counted per endpoint: what a look costs.
  const endpointReads = new Map<string, number>();
  const reads = {
    ...app.store.reads,
    webhookEndpoint: (endpointId: string) => {
      endpointReads.set(endpointId, (endpointReads.get(endpointId) ?? 0) + 1);
      return app.store.reads.webhookEndpoint(endpointId);
    },
  };
  const sender = createWebhookSender({
    store: { ...app.store, reads },
    committer: app.committer,
    clock,
    log: silentLogger(),
    transport,
    owner: 'whs_test',
    ...bounds,
    retentionMs: 72 * 3_600_000,
  });
  senders.push(sender);
  sender.wake();
  return { app, sender, clock, endpointReads };
};

/** An account on `plan` with one endpoint at `url`. */
const accountWithEndpoint = async (app: TestApp, plan: 'free' | 'scale', url: string) => {
  const account = await app.account(plan);
  const { endpointId } = await addWebhookEndpoint(app, { accountId: account.accountId, url });
  return { ...account, endpointId };
};

const hangUrl = (i: number) => `http://127.0.0.1:9/hang/${i}`;
const okUrl = 'http://127.0.0.1:9/ok';

describe("The webhook sender's places", () => {
  it.each([4, 40, 300])(
    'posts every delivery of an endpoint that answers while %i endpoints hang: they hold one place each and half of the places together',
    { timeout: 60_000 },
    async (hanging) => {
      const hooks = scriptedTransport((url) => (url === okUrl ? delivered(5) : undefined));
      const { app, endpointReads } = await appWithSender(hooks.transport);
      const bystander = await accountWithEndpoint(app, 'scale', okUrl);
      // The bystander's endpoint has answered once before the attack: it is an endpoint that answers.
      await submit(app, bystander.key);
      await eventually(async () => {
        const endpoint = await app.store.reads.webhookEndpoint(bystander.endpointId);
        return endpoint?.lastDeliveredAt === undefined ? undefined : true;
      });
      // Free accounts, each with an endpoint that never answers and two deliveries due.
      const attackers = await Promise.all(
        Array.from({ length: hanging }, (_, i) => accountWithEndpoint(app, 'free', hangUrl(i))),
      );
      await Promise.all(attackers.map(async ({ key }) => [await submit(app, key), await submit(app, key)]));
      await eventually(() => (hooks.open().length === Math.min(hanging, unansweredPlaces) ? true : undefined));

      const readsBefore = attackers.map(({ endpointId }) => endpointReads.get(endpointId) ?? 0);
      const reqIds: string[] = [];
      for (let i = 0; i < 20; i++) reqIds.push(await submit(app, bystander.key));
      const received = () => new Set(hooks.posted.filter((post) => post.url === okUrl).map((post) => post.deliveryId));
      // Every one posted, while no hanging post has ended (none is ever answered in this phase).
      await eventually(() => (received().size === 21 ? true : undefined), 20_000);
      expect(hooks.open().every((post) => post.url !== okUrl)).toBe(true);
      expect(hooks.mostOpen()).toBe(Math.min(hanging, unansweredPlaces));
      for (let i = 0; i < hanging; i++) expect(hooks.mostOpen(hangUrl(i))).toBeLessThanOrEqual(1);
      // The looks passed the full endpoints over once they knew them: each was read once at most meanwhile, however
      // many looks the bystander's deliveries made.
      const hangingReads = attackers.map(
        ({ endpointId }, i) => (endpointReads.get(endpointId) ?? 0) - (readsBefore[i] as number),
      );
      expect(Math.max(...hangingReads)).toBeLessThanOrEqual(1);
      console.log(
        `${hanging} hanging endpoints: ${hooks.open().length} posts open to them (at most ${unansweredPlaces}), ` +
          `the bystander's 20 deliveries all posted; hanging endpoints' views read meanwhile: ` +
          `${hangingReads.reduce((a, b) => a + b, 0)}`,
      );
    },
  );

  it('an endpoint that answered and then hangs holds its places once, then one place from its first timeout until it answers again', async () => {
    let hang = false;
    const url = 'http://127.0.0.1:9/flaky';
    const hooks = scriptedTransport(() => (hang ? undefined : delivered(5)));
    const { app } = await appWithSender(hooks.transport);
    const account = await accountWithEndpoint(app, 'scale', url);
    await submit(app, account.key);
    await eventually(() => (hooks.posted.length === 1 ? true : undefined));
    await eventually(async () =>
      (await app.store.reads.webhookEndpoint(account.endpointId))?.lastDeliveredAt === undefined ? undefined : true,
    );
    // It answers: its first hanging posts take its four places.
    hang = true;
    for (let i = 0; i < 10; i++) await submit(app, account.key);
    await eventually(() => (hooks.open().length === bounds.maxInFlightPerEndpoint ? true : undefined));
    // They time out: the endpoint is failing, and holds one place until it answers.
    hooks.resetMostOpen();
    for (const post of hooks.open()) post.answer(timedOut);
    await eventually(() => (hooks.open().length === 1 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(hooks.mostOpen(url)).toBe(1);
    // It answers again, promptly: its places come back.
    hang = false;
    (hooks.open()[0] as OpenPost).answer(delivered(5));
    await eventually(async () =>
      (await app.store.reads.webhookEndpoint(account.endpointId))?.failingSince === undefined ? true : undefined,
    );
    hang = true;
    hooks.resetMostOpen();
    for (let i = 0; i < 10; i++) await submit(app, account.key);
    await eventually(() => (hooks.open().length === bounds.maxInFlightPerEndpoint ? true : undefined));
  });

  it(`an endpoint that answers slower than ${slowAnswerMs} ms holds one place, and its places come back once it answers promptly`, async () => {
    let latencyMs = 5;
    const url = 'http://127.0.0.1:9/slow';
    const hooks = scriptedTransport(() => undefined);
    const { app } = await appWithSender(hooks.transport);
    const account = await accountWithEndpoint(app, 'scale', url);
    const answerAll = () => {
      for (const post of hooks.open()) post.answer(delivered(latencyMs));
    };
    await submit(app, account.key);
    await eventually(() => (hooks.open().length === 1 ? true : undefined));
    answerAll();
    for (let i = 0; i < 16; i++) await submit(app, account.key);
    // Answered promptly: four at once.
    await eventually(() => (hooks.open().length === bounds.maxInFlightPerEndpoint ? true : undefined));
    // Slow answers (delivered, but each took longer than slowAnswerMs): one at a time from then on.
    latencyMs = slowAnswerMs + 1_000;
    hooks.resetMostOpen();
    answerAll();
    for (let i = 0; i < 3; i++) {
      await eventually(() => (hooks.open().length === 1 ? true : undefined));
      await new Promise((resolve) => setTimeout(resolve, 50));
      answerAll();
    }
    expect(hooks.mostOpen(url)).toBe(1);
    // A prompt answer: four at once again.
    latencyMs = 5;
    await eventually(() => (hooks.open().length === 1 ? true : undefined));
    answerAll();
    await eventually(() => (hooks.open().length === bounds.maxInFlightPerEndpoint ? true : undefined));
  });

  it('the endpoints of one account hold maxInFlightPerAccount places at most, and another account still gets places', async () => {
    const hooks = scriptedTransport(() => undefined);
    const { app } = await appWithSender(hooks.transport);
    const big = await app.account('scale');
    const urls = [0, 1, 2].map((i) => `http://127.0.0.1:9/big/${i}`);
    const endpoints: { readonly endpointId: string }[] = [];
    for (const url of urls) endpoints.push(await addWebhookEndpoint(app, { accountId: big.accountId, url }));
    const other = await accountWithEndpoint(app, 'scale', okUrl);
    // Every endpoint answers once, promptly: each may hold four places.
    await submit(app, big.key);
    await submit(app, other.key);
    await eventually(() => (hooks.open().length === 4 ? true : undefined));
    for (const post of hooks.open()) post.answer(delivered(5));
    await eventually(async () => {
      const views = await Promise.all(
        [...endpoints, other].map(({ endpointId }) => app.store.reads.webhookEndpoint(endpointId)),
      );
      return views.every((view) => view?.lastDeliveredAt !== undefined) ? true : undefined;
    });
    hooks.resetMostOpen();
    for (let i = 0; i < 6; i++) await submit(app, big.key);
    await eventually(() => (hooks.open().length === bounds.maxInFlightPerAccount ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 100));
    // Three endpoints that could take twelve: the account's eight, and no more.
    expect(hooks.open()).toHaveLength(bounds.maxInFlightPerAccount);
    await submit(app, other.key);
    await eventually(() => (hooks.open().some((post) => post.url === okUrl) ? true : undefined));
    expect(hooks.open()).toHaveLength(bounds.maxInFlightPerAccount + 1);
  });
});
