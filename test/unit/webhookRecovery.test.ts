import { describe, expect, it } from 'vitest';
import { DeliveryLifecycleViolation, Refused } from '../../src/domain/errors.js';
import { defaultWebhookBackoff } from '../../src/domain/webhook/backoff.js';
import { type DeliveryCommand, type DeliveryState, decideDelivery } from '../../src/domain/webhook/delivery.js';
import { evolveEndpoint, type WebhookEndpointState } from '../../src/domain/webhook/endpoint.js';
import type { WebhookEvent } from '../../src/domain/webhook/events.js';
import { releasedByRecovery } from '../../src/domain/webhook/recovery.js';
import { dueDelivery, enabledEndpoint, foldDelivery, t0 } from '../support/webhookDomain.js';

// Issue 42: an endpoint's recovery, decided in the domain. Its first success after failures is recorded with the
// success; each delivery waiting for a retry after failing before it is then due at once, once.

type World = { readonly delivery: DeliveryState; readonly endpoint: WebhookEndpointState };

const decide = (world: World, command: (endpoint: WebhookEndpointState) => DeliveryCommand) => {
  const events = decideDelivery(world.delivery, command(world.endpoint));
  if (events instanceof Refused || events instanceof DeliveryLifecycleViolation) throw events;
  return {
    delivery: foldDelivery(events, world.delivery),
    endpoint: (events as WebhookEvent[]).reduce(evolveEndpoint, world.endpoint) as WebhookEndpointState,
    types: events.map((event) => event.type),
  };
};
const fail = (attempt: number, now: number, owner?: string) => (endpoint: WebhookEndpointState) =>
  ({
    type: 'RecordFailure',
    outcome: { attempt, owner, status: 502, latencyMs: 9, error: 'answered 502' },
    policy: defaultWebhookBackoff,
    random: 0.99,
    endpoint,
    now,
  }) as const;
const succeed = (attempt: number, now: number) => (endpoint: WebhookEndpointState) =>
  ({ type: 'RecordSuccess', outcome: { attempt, status: 200, latencyMs: 2 }, endpoint, now }) as const;
const start = (now: number) => (endpoint: WebhookEndpointState) =>
  ({ type: 'StartAttempt', owner: 'p1', leaseMs: 30_000, endpoint, now }) as const;

/** A delivery that failed once at t0 + 10 (its retry seconds away), on an endpoint failing since then. */
const failedOnce = (): World => {
  const endpoint = enabledEndpoint();
  return decide({ delivery: foldDelivery([dueDelivery(endpoint)]), endpoint }, fail(1, t0 + 10));
};

describe('An endpoint back from an outage', () => {
  it('records its first success after failures as its recovery, and no later one', () => {
    const failing = failedOnce();
    expect(failing.endpoint.failingSince).toBe(t0 + 10);
    const other = foldDelivery([{ ...dueDelivery(failing.endpoint), deliveryId: 'wh_other' }]);
    const recovered = decide({ delivery: other, endpoint: failing.endpoint }, succeed(1, t0 + 20));
    expect(recovered.types).toEqual(['WebhookDelivered', 'WebhookEndpointRecovered']);
    expect(recovered.endpoint).toMatchObject({ recoveredAt: t0 + 20, recoveredFrom: t0 + 10 });
    expect(recovered.endpoint.failingSince).toBeUndefined();
    // Answering already: a success is only a success.
    const third = foldDelivery([{ ...dueDelivery(recovered.endpoint), deliveryId: 'wh_third' }]);
    expect(decide({ delivery: third, endpoint: recovered.endpoint }, succeed(1, t0 + 30)).types).toEqual([
      'WebhookDelivered',
    ]);
  });

  it('makes a delivery that failed before the recovery due at once, once; it is started with its release', () => {
    const failing = failedOnce();
    const other = foldDelivery([{ ...dueDelivery(failing.endpoint), deliveryId: 'wh_other' }]);
    const { endpoint } = decide({ delivery: other, endpoint: failing.endpoint }, succeed(1, t0 + 20));
    const now = t0 + 21;
    expect(failing.delivery.context.availableAt).toBeGreaterThan(now + 1_000);
    expect(releasedByRecovery(failing.delivery, endpoint, now)).toBe(true);
    const started = decide({ delivery: failing.delivery, endpoint }, start(now));
    expect(started.types).toEqual(['WebhookDeliveryReleased', 'WebhookAttemptStarted']);
    expect(started.delivery).toMatchObject({ status: 'sending', context: { releasedAt: now, attempts: 2 } });
    // It fails again: back to its backoff, and not released by a later recovery.
    const again = decide({ delivery: started.delivery, endpoint: started.endpoint }, fail(2, now + 5, 'p1'));
    const later = { ...again.endpoint, failingSince: undefined, recoveredAt: now + 50 };
    expect(releasedByRecovery(again.delivery, later, now + 60)).toBe(false);
    expect(again.delivery.context.recentAttempts?.map((a) => a.status)).toEqual([502, 502]);
  });

  it('releases nothing while the endpoint fails, nor a delivery whose last attempt came after the recovery', () => {
    const failing = failedOnce();
    expect(releasedByRecovery(failing.delivery, failing.endpoint, t0 + 11)).toBe(false);
    const recoveredBefore = { ...failing.endpoint, failingSince: undefined, recoveredAt: t0 + 5 };
    expect(releasedByRecovery(failing.delivery, recoveredBefore, t0 + 11)).toBe(false);
    const disabled = { ...recoveredBefore, recoveredAt: t0 + 20, status: 'disabled' as const };
    expect(releasedByRecovery(failing.delivery, disabled, t0 + 21)).toBe(false);
  });
});
