import { describe, expect, it } from 'vitest';
import type { Command } from '../../../src/domain/commands.js';
import { defaultPlans } from '../../../src/domain/plans.js';
import { defaultWebhookBackoff } from '../../../src/domain/webhook/backoff.js';
import type { DeliveryAsk, EndpointAsk } from '../../../src/domain/webhook/commands.js';
import { webhookDeliveryId, webhookEventId } from '../../../src/domain/webhook/eventTypes.js';
import type { StoreShape } from '../../../src/ports/Store.js';
import type { Contract } from '../contract.js';
import { accountId, commitOne, createAccount, eventsOf, submit } from '../fixtures.js';

const endpointId = `whep_${'R'.repeat(16)}`;
const reqIdOf = (n: number) => `req_${String(n).padStart(30, 'q')}`;
const deliveryOf = (n: number) => webhookDeliveryId(webhookEventId(reqIdOf(n), 'request.cancelled'), endpointId);

const endpointCommand = (command: EndpointAsk): Command => ({ type: 'WebhookEndpoint', endpointId, command });
const deliveryCommand = (n: number, command: DeliveryAsk): Command => ({
  type: 'WebhookDelivery',
  deliveryId: deliveryOf(n),
  command,
});
const start = (n: number, now: number) =>
  deliveryCommand(n, { type: 'StartAttempt', owner: 'sender_a', leaseMs: 10_000, now });
const fail = (n: number, attempt: number, now: number) =>
  deliveryCommand(n, {
    type: 'RecordFailure',
    outcome: { attempt, owner: 'sender_a', status: 503, latencyMs: 4, error: 'answered 503' },
    policy: defaultWebhookBackoff,
    // The far end of the jitter: each retry is seconds away, where the clock of these commands stays.
    random: 0.99,
    now,
  });
const succeed = (n: number, attempt: number, now: number) =>
  deliveryCommand(n, {
    type: 'RecordSuccess',
    outcome: { attempt, owner: 'sender_a', status: 200, latencyMs: 3 },
    now,
  });
const typesOf = (outcome: Awaited<ReturnType<typeof commitOne>>) => eventsOf(outcome).map((event) => event.type);
const dueAt = async (store: StoreShape, now: number, perEndpoint = 10) =>
  (await store.reads.dueWebhookDeliveries(now, { perEndpoint, limit: 100 })).due.map((d) => d.deliveryId).sort();

/** An endpoint whose three deliveries failed once each (their retries seconds away), and a fourth due at 60. */
const failingEndpoint = async (store: StoreShape) => {
  await store.commit({
    commands: [
      createAccount(1),
      endpointCommand({
        type: 'AddEndpoint',
        accountId: accountId(1),
        url: 'https://hooks.example.com/recover',
        events: [],
        secretId: 'sec_recover',
        secret: 'whsec_recover',
        plans: defaultPlans,
        allowHttp: false,
        now: 10,
      }),
    ],
  });
  for (const n of [1, 2, 3, 4]) await commitOne(store, submit(reqIdOf(n), { now: 20 }));
  await store.commit({ commands: [1, 2, 3].map((n) => ({ type: 'Cancel', reqId: reqIdOf(n), now: 30 }) as Command) });
  await store.commit({ commands: [1, 2, 3].map((n) => start(n, 40)) });
  await store.commit({ commands: [1, 2, 3].map((n) => fail(n, 1, 50)) });
  await commitOne(store, { type: 'Cancel', reqId: reqIdOf(4), now: 60 });
};

/**
 * Issue 42, "webhooks after an outage": an endpoint's first delivered attempt after failures is recorded as its
 * recovery in the same write, and from then on its deliveries waiting for a retry are due at once (each once), on
 * every store, so that every process and node sending from it sees them due.
 */
export const webhookRecoveryFeatures = ({ open }: Contract) =>
  describe('webhooks after an outage', () => {
    it("records an endpoint's first success after failures as its recovery, in the same write, and makes its waiting deliveries due at once, at most the in-flight bound of them per read", async () => {
      const store = await open();
      await failingEndpoint(store);
      expect((await store.reads.webhookEndpoint(endpointId))?.failingSince).toBe(50);
      // Before the recovery, only the new delivery is due: the others wait for their retries.
      expect(await dueAt(store, 65)).toEqual([deliveryOf(4)]);
      await commitOne(store, start(4, 70));
      const recovered = await commitOne(store, succeed(4, 1, 80));
      expect(typesOf(recovered)).toEqual(['WebhookDelivered', 'WebhookEndpointRecovered']);
      expect(eventsOf(recovered)[1]).toMatchObject({ endpointId, failingSince: 50, at: 80 });
      const endpoint = await store.reads.webhookEndpoint(endpointId);
      expect(endpoint).toMatchObject({ recoveredAt: 80, recoveredFrom: 50, lastDeliveredAt: 80 });
      expect(endpoint?.failingSince).toBeUndefined();
      // Their retries are seconds away, yet all three are due now; a read takes the endpoint's bound of them.
      const retries = await Promise.all([1, 2, 3].map((n) => store.reads.webhookDelivery(deliveryOf(n))));
      for (const delivery of retries) expect(delivery?.context.availableAt).toBeGreaterThan(1_000);
      expect(await dueAt(store, 90)).toEqual([1, 2, 3].map(deliveryOf).sort());
      expect(await dueAt(store, 90, 2)).toHaveLength(2);
      // A success with no failure before it is no recovery.
      const started = await commitOne(store, start(1, 100));
      expect(typesOf(started)).toEqual(['WebhookDeliveryReleased', 'WebhookAttemptStarted']);
      expect(typesOf(await commitOne(store, succeed(1, 2, 105)))).toEqual(['WebhookDelivered']);
    });

    it('makes a delivery due so only once: one that fails again waits for its retry, even after a later recovery', async () => {
      const store = await open();
      await failingEndpoint(store);
      await commitOne(store, start(4, 70));
      await commitOne(store, succeed(4, 1, 80));
      await store.commit({ commands: [start(1, 100), start(2, 100)] });
      // Delivery 1 fails again: the endpoint is failing, and nothing more is due ahead of its retry.
      expect(typesOf(await commitOne(store, fail(1, 2, 110)))).toEqual(['WebhookAttemptFailed']);
      expect(await dueAt(store, 112)).toEqual([]);
      // Delivery 2's success is a new recovery: delivery 3 is due again, delivery 1 (made due once) is not.
      expect(typesOf(await commitOne(store, succeed(2, 2, 120)))).toEqual([
        'WebhookDelivered',
        'WebhookEndpointRecovered',
      ]);
      expect(await dueAt(store, 130)).toEqual([deliveryOf(3)]);
      // A delivery's log keeps each attempt, not only its last.
      expect((await store.reads.webhookDelivery(deliveryOf(1)))?.context.recentAttempts).toEqual([
        { attempt: 1, at: 50, status: 503, latencyMs: 4, error: 'answered 503' },
        { attempt: 2, at: 110, status: 503, latencyMs: 4, error: 'answered 503' },
      ]);
    });

    it("counts an endpoint's backlog up to a bound and says when its next attempt is", async () => {
      const store = await open();
      await failingEndpoint(store);
      const all = await store.reads.webhookBacklog(endpointId, 10);
      expect(all).toEqual({ waiting: 4, truncated: false, nextAttemptAt: 60 });
      expect(await store.reads.webhookBacklog(endpointId, 2)).toMatchObject({ waiting: 2, truncated: true });
      expect(await store.reads.webhookBacklog(`whep_${'N'.repeat(16)}`, 10)).toEqual({ waiting: 0, truncated: false });
    });
  });
