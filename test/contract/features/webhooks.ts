import { describe, expect, it } from 'vitest';
import type { Command } from '../../../src/domain/commands.js';
import { AccountLimitReached, DeliveryLifecycleViolation, Refused } from '../../../src/domain/errors.js';
import { defaultPlans } from '../../../src/domain/plans.js';
import { defaultWebhookBackoff } from '../../../src/domain/webhook/backoff.js';
import {
  type DeliveryAsk,
  type EndpointAsk,
  webhookSecretCredentialKey,
} from '../../../src/domain/webhook/commands.js';
import { webhookDeliveryId, webhookEventId } from '../../../src/domain/webhook/eventTypes.js';
import type { StoreShape } from '../../../src/ports/Store.js';
import { dueEndpointScan } from '../../../src/storage/webhookReads.js';
import type { Contract } from '../contract.js';
import { accountId, commitOne, createAccount, eventsOf, oneToN, submit } from '../fixtures.js';

const endpointIdOf = (n: number) => `whep_${String(n).padStart(16, 'E')}`;
const reqIdOf = (n: number) => `req_${String(n).padStart(30, 'r')}`;

const endpointCommand = (endpointId: string, command: EndpointAsk): Command => ({
  type: 'WebhookEndpoint',
  endpointId,
  command,
});
const deliveryCommand = (deliveryId: string, command: DeliveryAsk): Command => ({
  type: 'WebhookDelivery',
  deliveryId,
  command,
});

const addEndpoint = (n: number, { account = 1, now = 10 } = {}) =>
  endpointCommand(endpointIdOf(n), {
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

const typesOf = (outcome: Awaited<ReturnType<typeof commitOne>>) => eventsOf(outcome).map((event) => event.type);

/** The delivery of request `reqId`'s `request.cancelled` to endpoint `endpointId`. */
const cancelledDelivery = (reqId: string, endpointId: string) =>
  webhookDeliveryId(webhookEventId(reqId, 'request.cancelled'), endpointId);

const plainDue = (_now: number) => ({ perEndpoint: 10, limit: 100 }) as const;

/** An account (free plan: one endpoint; scale: ten) with one endpoint and a cancelled request delivered to it. */
const withDueDelivery = async (store: StoreShape) => {
  await store.commit({ commands: [createAccount(1), addEndpoint(1)] });
  await commitOne(store, submit(reqIdOf(1), { now: 20 }));
  const ended = await commitOne(store, cancel(reqIdOf(1), 30));
  return { ended, deliveryId: cancelledDelivery(reqIdOf(1), endpointIdOf(1)) };
};

/**
 * Issue 30: webhook endpoints and their deliveries are kept like requests, decided in the store's write. An endpoint
 * is listed among its account's while it is not removed, its plan's bound counted inside the write, its secret kept
 * among the credentials (never in the log); a request's ending makes a delivery due in the same commit (the outbox);
 * a delivery is due when it may be attempted, each endpoint's in turn, and not while an attempt holds its lease.
 */
export const webhookFeatures = ({ open }: Contract) =>
  describe('webhooks', () => {
    it("keeps an added endpoint, lists it among its account's, and keeps its secret beside the log, not in it", async () => {
      const store = await open();
      const [, added] = await store.commit({ commands: [createAccount(1), addEndpoint(1)] });
      expect(typesOf(added)).toEqual(['WebhookEndpointAdded']);
      expect(await store.reads.webhookEndpoint(endpointIdOf(1))).toMatchObject({
        endpointId: endpointIdOf(1),
        accountId: accountId(1),
        url: 'https://hooks.example.com/1',
        status: 'enabled',
        secretId: 'sec_1',
      });
      expect((await store.reads.webhookEndpointsOf(accountId(1))).map((e) => e.endpointId)).toEqual([endpointIdOf(1)]);
      expect(await store.reads.webhookEndpointsOf(accountId(2))).toEqual([]);
      expect(await store.reads.credential(webhookSecretCredentialKey('sec_1'))).toBe('whsec_secret1');
      const logged = JSON.stringify(eventsOf(added));
      expect(logged).not.toContain('whsec_');
    });

    it("counts the plan's bound of endpoints inside the write: a second add in the same batch is refused", async () => {
      const store = await open();
      const outcomes = await store.commit({
        commands: [createAccount(1), addEndpoint(1), addEndpoint(2, { now: 11 })],
      });
      expect(typesOf(outcomes[1])).toEqual(['WebhookEndpointAdded']);
      expect(outcomes[2]).toBeInstanceOf(AccountLimitReached);
      // Removed, it frees its place; its secret goes with it.
      const removed = await commitOne(
        store,
        endpointCommand(endpointIdOf(1), { type: 'RemoveEndpoint', accountId: accountId(1), now: 12 }),
      );
      expect(typesOf(removed)).toEqual(['WebhookEndpointRemoved']);
      expect(await store.reads.webhookEndpointsOf(accountId(1))).toEqual([]);
      expect(await store.reads.credential(webhookSecretCredentialKey('sec_1'))).toBeUndefined();
      expect((await store.reads.webhookEndpoint(endpointIdOf(1)))?.status).toBe('removed');
      expect(typesOf(await commitOne(store, addEndpoint(2, { now: 13 })))).toEqual(['WebhookEndpointAdded']);
    });

    it('makes a delivery due in the same commit as the request ending it is about, and only for its own account', async () => {
      const store = await open();
      await store.commit({ commands: [createAccount(1), createAccount(2, 'two@example.com'), addEndpoint(1)] });
      await store.commit({ commands: [submit(reqIdOf(1), { now: 20 }), submit(reqIdOf(2), { now: 20, account: 2 })] });
      const [mine, theirs] = await store.commit({ commands: [cancel(reqIdOf(1), 30), cancel(reqIdOf(2), 30)] });
      expect(typesOf(mine)).toEqual(['RequestCancelled', 'WebhookDeliveryDue']);
      expect(typesOf(theirs)).toEqual(['RequestCancelled']);
      const deliveryId = cancelledDelivery(reqIdOf(1), endpointIdOf(1));
      expect(eventsOf(mine)[1]).toMatchObject({
        deliveryId,
        endpointId: endpointIdOf(1),
        eventId: webhookEventId(reqIdOf(1), 'request.cancelled'),
        eventType: 'request.cancelled',
        dataId: reqIdOf(1),
        createdAt: 30,
        giveUpAt: 30 + defaultWebhookBackoff.maxTotalMs,
      });
      expect(await store.reads.webhookDelivery(deliveryId)).toMatchObject({ status: 'waiting' });
      expect(
        (await store.reads.webhookDeliveriesOf(endpointIdOf(1), { limit: 10 })).map((d) => d.context.deliveryId),
      ).toEqual([deliveryId]);
      expect((await store.reads.dueWebhookDeliveries(29, plainDue(29))).due).toEqual([]);
      expect(await store.reads.dueWebhookDeliveries(29, plainDue(29))).toMatchObject({ next: 30 });
      expect((await store.reads.dueWebhookDeliveries(30, plainDue(30))).due).toEqual([
        { deliveryId, endpointId: endpointIdOf(1) },
      ]);
    });

    it('sees an endpoint added earlier in the same batch when an ending makes deliveries due', async () => {
      const store = await open();
      await store.commit({ commands: [createAccount(1), submit(reqIdOf(1), { now: 20 })] });
      const [, ended] = await store.commit({ commands: [addEndpoint(1, { now: 25 }), cancel(reqIdOf(1), 30)] });
      expect(typesOf(ended)).toEqual(['RequestCancelled', 'WebhookDeliveryDue']);
    });

    it("holds a delivery out of the due ones while an attempt's lease runs, and records its owner's outcome only", async () => {
      const store = await open();
      const { deliveryId } = await withDueDelivery(store);
      const started = await commitOne(
        store,
        deliveryCommand(deliveryId, { type: 'StartAttempt', owner: 'sender_a', leaseMs: 10_000, now: 40 }),
      );
      expect(typesOf(started)).toEqual(['WebhookAttemptStarted']);
      expect((await store.reads.dueWebhookDeliveries(41, plainDue(41))).due).toEqual([]);
      // Lapsed: due again at the lease's end, for another sender to take over.
      expect((await store.reads.dueWebhookDeliveries(10_040, plainDue(10_040))).due).toHaveLength(1);
      const stale = await commitOne(
        store,
        deliveryCommand(deliveryId, {
          type: 'RecordSuccess',
          outcome: { attempt: 1, owner: 'sender_b', status: 200, latencyMs: 5 },
          now: 50,
        }),
      );
      expect(stale).toBeInstanceOf(DeliveryLifecycleViolation);
      const delivered = await commitOne(
        store,
        deliveryCommand(deliveryId, {
          type: 'RecordSuccess',
          outcome: { attempt: 1, owner: 'sender_a', status: 200, latencyMs: 5 },
          now: 50,
        }),
      );
      expect(typesOf(delivered)).toEqual(['WebhookDelivered']);
      expect(await store.reads.webhookDelivery(deliveryId)).toMatchObject({
        status: 'delivered',
        context: { lastStatus: 200, lastLatencyMs: 5, deliveredAt: 50 },
      });
      expect((await store.reads.dueWebhookDeliveries(20_000, plainDue(20_000))).due).toEqual([]);
      expect(await store.reads.webhookEndpoint(endpointIdOf(1))).toMatchObject({ lastDeliveredAt: 50 });
    });

    it('makes a failed delivery due again at its retry, and gives it up once its endpoint is removed', async () => {
      const store = await open();
      const { deliveryId } = await withDueDelivery(store);
      await commitOne(
        store,
        deliveryCommand(deliveryId, { type: 'StartAttempt', owner: 'sender_a', leaseMs: 10_000, now: 40 }),
      );
      const failed = await commitOne(
        store,
        deliveryCommand(deliveryId, {
          type: 'RecordFailure',
          outcome: { attempt: 1, owner: 'sender_a', status: 500, latencyMs: 7, error: 'answered 500' },
          policy: defaultWebhookBackoff,
          random: 0.5,
          now: 50,
        }),
      );
      expect(typesOf(failed)).toEqual(['WebhookAttemptFailed']);
      const retryAt = (eventsOf(failed)[0] as { retryAt: number }).retryAt;
      expect(retryAt).toBeGreaterThan(50);
      expect((await store.reads.dueWebhookDeliveries(retryAt - 1, plainDue(0))).due).toEqual([]);
      expect((await store.reads.dueWebhookDeliveries(retryAt, plainDue(0))).due).toHaveLength(1);
      expect(await store.reads.webhookEndpoint(endpointIdOf(1))).toMatchObject({ failingSince: 50 });
      await commitOne(
        store,
        endpointCommand(endpointIdOf(1), { type: 'RemoveEndpoint', accountId: accountId(1), now: 60 }),
      );
      const gaveUp = await commitOne(store, deliveryCommand(deliveryId, { type: 'GiveUp', now: 70 }));
      expect(eventsOf(gaveUp)).toMatchObject([{ type: 'WebhookDeliveryGaveUp', reason: 'endpoint_removed' }]);
      expect((await store.reads.dueWebhookDeliveries(retryAt, plainDue(0))).due).toEqual([]);
      expect(await commitOne(store, deliveryCommand('wh_nothing', { type: 'GiveUp', now: 70 }))).toBeInstanceOf(
        Refused,
      );
    });

    it("takes each endpoint's due deliveries in turn, so one endpoint's backlog holds back no other", async () => {
      const store = await open();
      const scale = (n: number): Command => ({
        type: 'Account',
        accountId: accountId(n),
        command: { type: 'ChangePlan', plan: 'scale', now: 2 },
      });
      await store.commit({ commands: [createAccount(1), scale(1), addEndpoint(1), addEndpoint(2, { now: 11 })] });
      // Endpoint 2 receives only request.completed: the cancellations go to endpoint 1 alone.
      await store.commit({
        commands: [
          endpointCommand(endpointIdOf(3), {
            type: 'AddEndpoint',
            accountId: accountId(1),
            url: 'https://hooks.example.com/3',
            events: ['request.completed'],
            secretId: 'sec_3',
            secret: 'whsec_3',
            plans: defaultPlans,
            allowHttp: false,
            now: 12,
          }),
        ],
      });
      await store.commit({ commands: [1, 2, 3, 4, 5].map((n) => submit(reqIdOf(n), { now: 20 })) });
      await store.commit({ commands: [1, 2, 3, 4, 5].map((n) => cancel(reqIdOf(n), 30 + n)) });
      const first = await store.reads.dueWebhookDeliveries(100, { perEndpoint: 2, limit: 10 });
      expect(first.due.map((d) => d.endpointId)).toEqual([
        endpointIdOf(1),
        endpointIdOf(1),
        endpointIdOf(2),
        endpointIdOf(2),
      ]);
      const next = await store.reads.dueWebhookDeliveries(100, { perEndpoint: 2, limit: 10, after: endpointIdOf(1) });
      expect(next.due.map((d) => d.endpointId)).toEqual([
        endpointIdOf(2),
        endpointIdOf(2),
        endpointIdOf(1),
        endpointIdOf(1),
      ]);
      const bounded = await store.reads.dueWebhookDeliveries(100, { perEndpoint: 5, limit: 3 });
      expect(bounded.due).toHaveLength(3);
      // Each endpoint's log, newest first, paged.
      const page = await store.reads.webhookDeliveriesOf(endpointIdOf(2), { limit: 2 });
      expect(page.map((d) => d.context.dataId)).toEqual([reqIdOf(5), reqIdOf(4)]);
      const older = await store.reads.webhookDeliveriesOf(endpointIdOf(2), {
        limit: 10,
        before: { createdAt: page[1]?.context.createdAt ?? 0, deliveryId: page[1]?.context.deliveryId ?? '' },
      });
      expect(older.map((d) => d.context.dataId)).toEqual([reqIdOf(3), reqIdOf(2), reqIdOf(1)]);
    });

    it("lists an account's endpoints by when they were added, not by their ids", async () => {
      const store = await open();
      const scale: Command = {
        type: 'Account',
        accountId: accountId(1),
        command: { type: 'ChangePlan', plan: 'scale', now: 2 },
      };
      await store.commit({ commands: [createAccount(1), scale, addEndpoint(2, { now: 5 })] });
      await store.commit({ commands: [addEndpoint(1, { now: 10 }), addEndpoint(3, { now: 10 })] });
      expect((await store.reads.webhookEndpointsOf(accountId(1))).map((e) => e.endpointId)).toEqual([
        endpointIdOf(2),
        endpointIdOf(1),
        endpointIdOf(3),
      ]);
    });

    it("pages an endpoint's delivery log by time then id, when deliveries share a time", async () => {
      const store = await open();
      await store.commit({ commands: [createAccount(1), addEndpoint(1)] });
      await store.commit({ commands: [1, 2, 3].map((n) => submit(reqIdOf(n), { now: 20 })) });
      await store.commit({ commands: [1, 2, 3].map((n) => cancel(reqIdOf(n), 30)) });
      const ids = [1, 2, 3].map((n) => cancelledDelivery(reqIdOf(n), endpointIdOf(1))).sort();
      const first = await store.reads.webhookDeliveriesOf(endpointIdOf(1), { limit: 1 });
      expect(first.map((d) => d.context.deliveryId)).toEqual([ids[2]]);
      const rest = await store.reads.webhookDeliveriesOf(endpointIdOf(1), {
        limit: 10,
        before: { createdAt: 30, deliveryId: ids[2] ?? '' },
      });
      expect(rest.map((d) => d.context.deliveryId)).toEqual([ids[1], ids[0]]);
      expect(await store.reads.webhookDeliveriesOf(endpointIdOf(1), { limit: 0 })).toEqual([]);
    });

    it('tells when the next delivery becomes due, and takes none beyond the bounds asked', async () => {
      const store = await open();
      await store.commit({ commands: [createAccount(1), addEndpoint(1)] });
      await store.commit({ commands: [1, 2].map((n) => submit(reqIdOf(n), { now: 20 })) });
      await store.commit({ commands: [cancel(reqIdOf(1), 30), cancel(reqIdOf(2), 40)] });
      expect(await store.reads.dueWebhookDeliveries(35, plainDue(35))).toEqual({
        due: [{ deliveryId: cancelledDelivery(reqIdOf(1), endpointIdOf(1)), endpointId: endpointIdOf(1) }],
        next: 40,
      });
      expect(await store.reads.dueWebhookDeliveries(50, { perEndpoint: 0, limit: 10 })).toEqual({ due: [] });
      expect(await store.reads.dueWebhookDeliveries(50, { perEndpoint: 10, limit: 0 })).toEqual({ due: [] });
      expect((await store.reads.dueWebhookDeliveries(50, { perEndpoint: 1, limit: 10 })).due).toHaveLength(1);
    });

    it('reads past the endpoints a sender passes over without counting them toward its limit, and says where a bound stopped it', async () => {
      const store = await open();
      const scale: Command = {
        type: 'Account',
        accountId: accountId(1),
        command: { type: 'ChangePlan', plan: 'scale', now: 2 },
      };
      await store.commit({ commands: [createAccount(1), scale, addEndpoint(1), addEndpoint(2), addEndpoint(3)] });
      await store.commit({ commands: [1, 2].map((n) => submit(reqIdOf(n), { now: 20 })) });
      await store.commit({ commands: [1, 2].map((n) => cancel(reqIdOf(n), 30 + n)) });
      const endpointsOf = (read: Awaited<ReturnType<typeof store.reads.dueWebhookDeliveries>>) =>
        read.due.map((d) => d.endpointId);
      // Endpoint 1 passed over: endpoint 2's two fill the limit, and the read stopped there.
      const passed = await store.reads.dueWebhookDeliveries(100, {
        perEndpoint: 2,
        limit: 2,
        passOver: (id) => id === endpointIdOf(1),
      });
      expect(endpointsOf(passed)).toEqual([endpointIdOf(2), endpointIdOf(2)]);
      expect(passed.stoppedAt).toBe(endpointIdOf(2));
      // From after endpoint 2, endpoint 3 passed over, round to endpoints 1 and 2: one each, the limit reached.
      const round = await store.reads.dueWebhookDeliveries(100, {
        after: endpointIdOf(2),
        perEndpoint: 1,
        limit: 2,
        passOver: (id) => id === endpointIdOf(3),
      });
      expect(endpointsOf(round)).toEqual([endpointIdOf(1), endpointIdOf(2)]);
      expect(round.stoppedAt).toBe(endpointIdOf(2));
      // Every endpoint read, nothing stopped it: no stoppedAt.
      const whole = await store.reads.dueWebhookDeliveries(100, { perEndpoint: 2, limit: 10 });
      expect(whole.due).toHaveLength(6);
      expect(whole.stoppedAt).toBeUndefined();
      const allFull = await store.reads.dueWebhookDeliveries(100, { perEndpoint: 2, limit: 10, passOver: () => true });
      expect(allFull).toEqual({ due: [] });
    });

    it(`looks at ${dueEndpointScan} endpoints in one read at most, those passed over included, and goes on from where it stopped`, async () => {
      const store = await open();
      // Six enterprise accounts of 50 endpoints each, every endpoint with one delivery due.
      const accounts = oneToN(6);
      await store.commit({
        commands: accounts.flatMap((a) => [
          createAccount(a),
          { type: 'Account', accountId: accountId(a), command: { type: 'ChangePlan', plan: 'enterprise', now: 2 } },
        ]),
      });
      await store.commit({
        commands: accounts.flatMap((a) => oneToN(50).map((e) => addEndpoint(a * 100 + e, { account: a }))),
      });
      await store.commit({ commands: accounts.map((a) => submit(reqIdOf(a), { now: 20, account: a })) });
      await store.commit({ commands: accounts.map((a) => cancel(reqIdOf(a), 30)) });
      const all = accounts.flatMap((a) => oneToN(50).map((e) => endpointIdOf(a * 100 + e))).sort();
      const wanted = all.at(-1) as string;
      // Every endpoint but the last passed over: the first read stops at the bound, the next reaches the last.
      const ask = { perEndpoint: 1, limit: 10, passOver: (id: string) => id !== wanted };
      const first = await store.reads.dueWebhookDeliveries(100, ask);
      expect(first.due).toEqual([]);
      expect(first.stoppedAt).toBe(all[dueEndpointScan - 1]);
      const second = await store.reads.dueWebhookDeliveries(100, { ...ask, after: first.stoppedAt });
      expect(second.due.map((d) => d.endpointId)).toEqual([wanted]);
    });

    it('keeps both secrets through a rotation, and forgets the oldest at the next one', async () => {
      const store = await open();
      await store.commit({ commands: [createAccount(1), addEndpoint(1)] });
      const rotate = (secretId: string, now: number) =>
        endpointCommand(endpointIdOf(1), {
          type: 'RotateSecret',
          accountId: accountId(1),
          secretId,
          secret: `whsec_${secretId}`,
          now,
        });
      expect(typesOf(await commitOne(store, rotate('sec_b', 20)))).toEqual(['WebhookSecretRotated']);
      expect(await store.reads.webhookEndpoint(endpointIdOf(1))).toMatchObject({
        secretId: 'sec_b',
        previousSecret: { secretId: 'sec_1' },
      });
      expect(await store.reads.credential(webhookSecretCredentialKey('sec_1'))).toBe('whsec_secret1');
      expect(await store.reads.credential(webhookSecretCredentialKey('sec_b'))).toBe('whsec_sec_b');
      await commitOne(store, rotate('sec_c', 30));
      expect(await store.reads.credential(webhookSecretCredentialKey('sec_1'))).toBeUndefined();
      expect(await store.reads.credential(webhookSecretCredentialKey('sec_b'))).toBe('whsec_sec_b');
      expect(await store.reads.credential(webhookSecretCredentialKey('sec_c'))).toBe('whsec_sec_c');
    });
  });
