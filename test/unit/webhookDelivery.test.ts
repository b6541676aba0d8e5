import { describe, expect, it } from 'vitest';
import { DeliveryLifecycleViolation, Refused } from '../../src/domain/errors.js';
import { defaultWebhookBackoff, nextRetryDelayMs } from '../../src/domain/webhook/backoff.js';
import {
  type DeliveryCommand,
  type DeliveryState,
  decideDelivery,
  initialDeliveryState,
} from '../../src/domain/webhook/delivery.js';
import { evolveEndpoint, type WebhookEndpointState } from '../../src/domain/webhook/endpoint.js';
import type { WebhookEvent } from '../../src/domain/webhook/events.js';
import { accountId, day, dueDelivery, enabledEndpoint, foldDelivery, hour, t0 } from '../support/webhookDomain.js';

const policy = defaultWebhookBackoff;

/** Decides against the delivery and its endpoint, then folds both as the store will. */
const run = (
  start: { delivery: DeliveryState; endpoint: WebhookEndpointState },
  command: (endpoint: WebhookEndpointState) => DeliveryCommand,
) => {
  const events = decideDelivery(start.delivery, command(start.endpoint));
  if (events instanceof Refused || events instanceof DeliveryLifecycleViolation)
    return { ...start, events: [] as WebhookEvent[], refused: events };
  return {
    delivery: foldDelivery(events, start.delivery),
    endpoint: (events as WebhookEvent[]).reduce(evolveEndpoint, start.endpoint) as WebhookEndpointState,
    events: events as WebhookEvent[],
    refused: undefined,
  };
};

const due = () => {
  const endpoint = enabledEndpoint();
  return { delivery: foldDelivery([dueDelivery(endpoint)]), endpoint };
};

const fail =
  (attempt: number, now: number, random = 0.5) =>
  (endpoint: WebhookEndpointState): DeliveryCommand => ({
    type: 'RecordFailure',
    outcome: { attempt, status: 500, latencyMs: 12, error: 'answered 500' },
    policy,
    random,
    endpoint,
    now,
  });
const succeed =
  (attempt: number, now: number, owner?: string) =>
  (endpoint: WebhookEndpointState): DeliveryCommand => ({
    type: 'RecordSuccess',
    outcome:
      owner === undefined ? { attempt, status: 200, latencyMs: 3 } : { attempt, owner, status: 200, latencyMs: 3 },
    endpoint,
    now,
  });

describe('A webhook delivery', () => {
  it('is due, then delivered by a 2xx, recording the attempt for the delivery log', () => {
    const delivered = run(due(), succeed(1, t0 + 50));
    expect(delivered.events).toEqual([
      {
        type: 'WebhookDelivered',
        deliveryId: delivered.delivery.context.deliveryId,
        endpointId: delivered.endpoint.endpointId,
        attempt: 1,
        status: 200,
        latencyMs: 3,
        at: t0 + 50,
      },
    ]);
    expect(delivered.delivery.status).toBe('delivered');
    expect(delivered.delivery.context).toMatchObject({
      attempts: 1,
      lastStatus: 200,
      lastLatencyMs: 3,
      deliveredAt: t0 + 50,
    });
  });

  it('retries a failed attempt at the backoff the policy and the drawn jitter give', () => {
    const failed = run(due(), fail(1, t0 + 10, 0.25));
    const retryAt = t0 + 10 + (nextRetryDelayMs(policy, 1, 10, () => 0.25) as number);
    expect(failed.events).toEqual([
      expect.objectContaining({
        type: 'WebhookAttemptFailed',
        attempt: 1,
        retryAt,
        status: 500,
        error: 'answered 500',
      }),
    ]);
    expect(failed.delivery).toMatchObject({ status: 'waiting', context: { availableAt: retryAt } });
    // Not before its time: an attempt started early is refused.
    const early = run(failed, (endpoint) => ({
      type: 'StartAttempt',
      owner: 'p1',
      leaseMs: 30_000,
      endpoint,
      now: retryAt - 1,
    }));
    expect(early.refused).toBeInstanceOf(DeliveryLifecycleViolation);
  });

  it('gives up, recording the last attempt, once the next retry would come after its retention (72 hours)', () => {
    const late = run(due(), fail(1, t0 + 72 * hour - 1_000));
    expect(late.events).toEqual([
      expect.objectContaining({ type: 'WebhookDeliveryGaveUp', reason: 'retention', attempt: 1 }),
    ]);
    expect(late.delivery.status).toBe('gave_up');
  });

  it('gives up without an attempt once its retention passed, and not before', () => {
    const before = run(due(), (endpoint) => ({ type: 'GiveUp', endpoint, now: t0 + 72 * hour - 1 }));
    expect(before.refused).toBeInstanceOf(Refused);
    const after = run(due(), (endpoint) => ({ type: 'GiveUp', endpoint, now: t0 + 72 * hour }));
    expect(after.events).toEqual([expect.objectContaining({ type: 'WebhookDeliveryGaveUp', reason: 'retention' })]);
  });

  it('is attempted by one sender at a time: the lease holder records the outcome, a sender whose lease was taken over does not', () => {
    const started = run(due(), (endpoint) => ({
      type: 'StartAttempt',
      owner: 'p1',
      leaseMs: 30_000,
      endpoint,
      now: t0 + 1,
    }));
    expect(started.delivery.status).toBe('sending');
    const second = run(started, (endpoint) => ({
      type: 'StartAttempt',
      owner: 'p2',
      leaseMs: 30_000,
      endpoint,
      now: t0 + 2,
    }));
    expect(second.refused).toBeInstanceOf(DeliveryLifecycleViolation);
    const takenOver = run(started, (endpoint) => ({
      type: 'StartAttempt',
      owner: 'p2',
      leaseMs: 30_000,
      endpoint,
      now: t0 + 30_001,
    }));
    expect(takenOver.delivery.context).toMatchObject({ owner: 'p2', attempts: 2 });
    expect(run(takenOver, succeed(1, t0 + 30_002, 'p1')).refused).toBeInstanceOf(DeliveryLifecycleViolation);
    expect(run(takenOver, succeed(2, t0 + 30_002, 'p1')).refused).toBeInstanceOf(DeliveryLifecycleViolation);
    expect(run(takenOver, succeed(2, t0 + 30_002, 'p2')).delivery.status).toBe('delivered');
  });

  it('is made due once: the same due event again (a replay, a second node) changes nothing', () => {
    const { delivery, endpoint } = due();
    expect(decideDelivery(initialDeliveryState, { type: 'MakeDue', due: dueDelivery(endpoint) })).toHaveLength(1);
    expect(decideDelivery(delivery, { type: 'MakeDue', due: dueDelivery(endpoint) })).toEqual([]);
  });
});

describe('Redelivery', () => {
  it('makes a delivered or given-up delivery due again with the same id, for a new retention', () => {
    const delivered = run(due(), succeed(1, t0 + 50));
    const again = run(delivered, (endpoint) => ({ type: 'Redeliver', accountId, policy, endpoint, now: t0 + 5 * day }));
    expect(again.events).toEqual([
      {
        type: 'WebhookRedeliveryRequested',
        deliveryId: delivered.delivery.context.deliveryId,
        endpointId: delivered.endpoint.endpointId,
        giveUpAt: t0 + 5 * day + policy.maxTotalMs,
        at: t0 + 5 * day,
      },
    ]);
    expect(again.delivery).toMatchObject({
      status: 'waiting',
      context: { deliveryId: delivered.delivery.context.deliveryId, redeliveries: 1 },
    });
    // Attempt numbers go on: the delivery log never shows the same attempt twice.
    expect(run(again, succeed(2, t0 + 5 * day + 1)).delivery.status).toBe('delivered');
  });
  it("changes nothing while the delivery is still due, and refuses another account's delivery or a disabled endpoint's", () => {
    expect(run(due(), (endpoint) => ({ type: 'Redeliver', accountId, policy, endpoint, now: t0 + 1 })).events).toEqual(
      [],
    );
    const delivered = run(due(), succeed(1, t0 + 50));
    const foreign = run(delivered, (endpoint) => ({
      type: 'Redeliver',
      accountId: 'acct_ZZZZZZZZZZZZZZZZ',
      policy,
      endpoint,
      now: t0 + 60,
    }));
    expect(foreign.refused?.message).toMatch(/no webhook delivery/);
    const disabled = { ...delivered, endpoint: { ...delivered.endpoint, status: 'disabled' as const } };
    expect(
      run(disabled, (endpoint) => ({ type: 'Redeliver', accountId, policy, endpoint, now: t0 + 60 })).refused?.message,
    ).toMatch(/enable it first/);
  });
});

describe('An endpoint that keeps failing', () => {
  /** Fails the delivery's attempts, one an hour, from `from` until `until`. */
  const failHourly = (state: ReturnType<typeof due>, from: number, until: number) => {
    let current = state;
    for (let now = from; now <= until; now += hour)
      current = run(current, fail(current.delivery.context.attempts + 1, now));
    return current;
  };

  it('is disabled once a delivery that failed all along reaches its 72-hour retention, its run being 3 days long', () => {
    const failing = failHourly(due(), t0, t0 + 71 * hour);
    expect(failing.endpoint).toMatchObject({ status: 'enabled', failingSince: t0 });
    expect(failing.delivery.status).toBe('waiting');
    // Past the retention no attempt is made: the sender gives the delivery up, which disables the endpoint.
    expect(run(failing, fail(73, t0 + 72 * hour)).refused).toBeInstanceOf(DeliveryLifecycleViolation);
    const gaveUp = run(failing, (endpoint) => ({ type: 'GiveUp', endpoint, now: t0 + 72 * hour }));
    expect(gaveUp.events).toEqual([
      expect.objectContaining({ type: 'WebhookDeliveryGaveUp', reason: 'retention' }),
      { type: 'WebhookEndpointDisabled', endpointId: gaveUp.endpoint.endpointId, failingSince: t0, at: t0 + 72 * hour },
    ]);
    expect(gaveUp.endpoint).toMatchObject({ status: 'disabled', disabledAt: t0 + 72 * hour });
  });

  it('is disabled by the first failure 3 days after its run of failures began, and that delivery gives up', () => {
    const first = failHourly(due(), t0, t0);
    const later = dueDelivery(first.endpoint);
    const otherId = `${later.deliveryId.slice(0, 10)}ZZZZ${later.deliveryId.slice(14)}`;
    const other = {
      endpoint: first.endpoint,
      delivery: foldDelivery([{ ...later, deliveryId: otherId, at: t0 + 2 * day, giveUpAt: t0 + 5 * day }]),
    };
    const almost = run(other, fail(1, t0 + 3 * day - hour));
    expect(almost.endpoint.status).toBe('enabled');
    const disabled = run(almost, fail(2, t0 + 3 * day));
    expect(disabled.events).toEqual([
      expect.objectContaining({ type: 'WebhookDeliveryGaveUp', reason: 'endpoint_disabled', attempt: 2 }),
      { type: 'WebhookEndpointDisabled', endpointId: disabled.endpoint.endpointId, failingSince: t0, at: t0 + 3 * day },
    ]);
    expect(disabled.endpoint).toMatchObject({ status: 'disabled', disabledAt: t0 + 3 * day });
  });

  it('is not disabled when a delivery got through within the 3 days: its run of failures starts again', () => {
    let state = due();
    state = run(state, fail(1, t0));
    state = run(state, succeed(2, t0 + 2 * day));
    expect(state.endpoint).not.toHaveProperty('failingSince');
    state = run(state, (endpoint) => ({ type: 'Redeliver', accountId, policy, endpoint, now: t0 + 2 * day + 1 }));
    state = run(state, fail(3, t0 + 3 * day));
    expect(state.endpoint).toMatchObject({ status: 'enabled', failingSince: t0 + 3 * day });
  });

  it('gives up its other pending deliveries when they come due, and refuses to start them', () => {
    const { delivery, endpoint } = due();
    const disabled: WebhookEndpointState = { ...endpoint, status: 'disabled' };
    expect(
      decideDelivery(delivery, { type: 'StartAttempt', owner: 'p1', leaseMs: 1, endpoint: disabled, now: t0 + 1 }),
    ).toBeInstanceOf(Refused);
    expect(decideDelivery(delivery, { type: 'GiveUp', endpoint: disabled, now: t0 + 1 })).toEqual([
      expect.objectContaining({ type: 'WebhookDeliveryGaveUp', reason: 'endpoint_disabled' }),
    ]);
    const removed: WebhookEndpointState = { ...endpoint, status: 'removed' };
    expect(decideDelivery(delivery, { type: 'GiveUp', endpoint: removed, now: t0 + 1 })).toEqual([
      expect.objectContaining({ type: 'WebhookDeliveryGaveUp', reason: 'endpoint_removed' }),
    ]);
  });
});
