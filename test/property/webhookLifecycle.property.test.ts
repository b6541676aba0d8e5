import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defaultPlans, type PlanName, planNames } from '../../src/domain/plans.js';
import { defaultWebhookBackoff } from '../../src/domain/webhook/backoff.js';
import {
  type DeliveryCommand,
  type DeliveryState,
  decideDelivery,
  evolveDelivery,
  evolveDeliveryWithMachine,
  initialDeliveryState,
} from '../../src/domain/webhook/delivery.js';
import { dueDeliveries, requestWebhookEvents } from '../../src/domain/webhook/dueDeliveries.js';
import {
  countsTowardLimit,
  decideEndpoint,
  disableAfterFailingMs,
  evolveEndpoint,
  type WebhookEndpointCommand,
  type WebhookEndpointState,
} from '../../src/domain/webhook/endpoint.js';
import type { WebhookEvent } from '../../src/domain/webhook/events.js';
import { webhookEventTypes } from '../../src/domain/webhook/eventTypes.js';
import { account, hour, t0 } from '../support/webhookDomain.js';

/**
 * The webhook rules as the store will run them: endpoint commands and delivery commands decided against the folded
 * states, in any order and at any time, accepted events appended to one log and folded. The rules are then read off
 * that log alone.
 */
const policy = defaultWebhookBackoff;
const endpointSlots = [
  'whep_AAAAAAAAAAAAAAAA',
  'whep_BBBBBBBBBBBBBBBB',
  'whep_CCCCCCCCCCCCCCCC',
  'whep_DDDDDDDDDDDDDDDD',
];
const sources = Array.from({ length: 6 }, (_, i) => `req_0190f2a0b1c2AbCdEfGhIjKlMnOpQrSt0${i}`);

type Op =
  | { kind: 'add'; slot: number; filter: number[] }
  | { kind: 'remove' | 'enable' | 'rotate'; slot: number }
  | { kind: 'end'; source: number; ending: number; responses: boolean }
  | { kind: 'replay'; source: number }
  | { kind: 'wait'; ms: number }
  | { kind: 'start'; pick: number; owner: number }
  | { kind: 'succeed' | 'fail'; pick: number; owner: number; honest: boolean; random: number }
  | { kind: 'giveUp' | 'redeliver'; pick: number };

const slot = fc.integer({ min: 0, max: endpointSlots.length - 1 });
const pick = fc.nat(50);
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('add' as const), slot, filter: fc.array(fc.nat(10), { maxLength: 3 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constantFrom('remove' as const, 'enable' as const, 'rotate' as const), slot }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('end' as const),
      source: fc.nat(sources.length - 1),
      ending: fc.nat(3),
      responses: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('replay' as const), source: fc.nat(sources.length - 1) }) },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 30 * hour }) }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('start' as const), pick, owner: fc.nat(1) }) },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constantFrom('succeed' as const, 'fail' as const, 'fail' as const, 'fail' as const),
      pick,
      owner: fc.nat(1),
      honest: fc.boolean(),
      random: fc.double({ min: 0, max: 1, noNaN: true }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom('giveUp' as const, 'redeliver' as const), pick }) },
);

const endingEvents = (reqId: string, ending: number, at: number) =>
  [
    { type: 'RequestCompleted', reqId, responseChars: 1, at } as const,
    { type: 'RequestFailed', reqId, reason: 'x', at } as const,
    { type: 'RequestCancelled', reqId, at } as const,
    { type: 'RequestExpired', reqId, at } as const,
  ][ending] as Parameters<typeof requestWebhookEvents>[1];

/** Runs the ops; returns the log, and what the checks along the way found. */
const simulate = (plan: PlanName, ops: readonly Op[]) => {
  const log: { event: WebhookEvent; endpointsAfter: number }[] = [];
  const endpoints = new Map<string, WebhookEndpointState>();
  const deliveries = new Map<string, DeliveryState>();
  const ended = new Map<number, { ending: number; responses: boolean; at: number; ids: string[] }>();
  const replayMismatches: string[] = [];
  /** Steps where the compiled machine and XState's own `transition` disagree (the event as decided, and the same
   * event from another owner, one attempt later and a minute later: moves the machine may refuse). */
  const compiledDivergences: string[] = [];
  const compareSteps = (state: DeliveryState, event: Extract<WebhookEvent, { deliveryId: string }>) => {
    const variants = [
      event,
      { ...event, owner: 'someone_else' },
      { ...event, attempt: ('attempt' in event ? (event.attempt ?? 0) : 0) + 1 },
      { ...event, at: event.at + 60_000 },
    ] as (typeof event)[];
    for (const variant of variants)
      if (JSON.stringify(evolveDelivery(state, variant)) !== JSON.stringify(evolveDeliveryWithMachine(state, variant)))
        compiledDivergences.push(`${state.status} ${JSON.stringify(variant)}`);
  };
  let now = t0;
  let secrets = 0;
  const count = () => [...endpoints.values()].filter(countsTowardLimit).length;
  const append = (events: readonly WebhookEvent[]) => {
    for (const event of events) {
      if ('deliveryId' in event) compareSteps(deliveries.get(event.deliveryId) ?? initialDeliveryState, event);
      if ('deliveryId' in event)
        deliveries.set(
          event.deliveryId,
          evolveDelivery(deliveries.get(event.deliveryId) ?? initialDeliveryState, event),
        );
      const endpoint = endpoints.get(event.endpointId);
      const next = evolveEndpoint(endpoint, event);
      if (next !== undefined) endpoints.set(event.endpointId, next);
      log.push({ event, endpointsAfter: count() });
    }
  };
  const endpointCommand = (id: string, command: WebhookEndpointCommand) => {
    const events = decideEndpoint(id, endpoints.get(id), command);
    if (Array.isArray(events)) append(events);
  };
  const deliveryCommand = (id: string, command: (endpoint: WebhookEndpointState | undefined) => DeliveryCommand) => {
    const delivery = deliveries.get(id) ?? initialDeliveryState;
    const events = decideDelivery(delivery, command(endpoints.get(delivery.context.endpointId)));
    if (Array.isArray(events)) append(events);
  };
  const makeDue = (source: number) => {
    const facts = ended.get(source);
    if (facts === undefined) return;
    const reqId = sources[source] as string;
    const made = requestWebhookEvents('processing', endingEvents(reqId, facts.ending, facts.at), {
      reqId,
      accountId: account().accountId,
      face: facts.responses ? 'responses' : undefined,
    });
    const ids = made.map((e) => e.eventId);
    if (facts.ids.length > 0 && JSON.stringify(ids) !== JSON.stringify(facts.ids)) replayMismatches.push(reqId);
    facts.ids = ids;
    for (const due of dueDeliveries(made, [...endpoints.values()], policy.maxTotalMs))
      deliveryCommand(due.deliveryId, () => ({ type: 'MakeDue', due }));
  };
  for (const o of ops) {
    const deliveryIds = [...deliveries.keys()];
    const chosen =
      'pick' in o && deliveryIds.length > 0 ? (deliveryIds[o.pick % deliveryIds.length] as string) : undefined;
    const owner = 'owner' in o ? `p${o.owner}` : 'p0';
    switch (o.kind) {
      case 'wait':
        now += o.ms;
        break;
      case 'add':
        endpointCommand(endpointSlots[o.slot] as string, {
          type: 'AddEndpoint',
          endpointId: endpointSlots[o.slot] as string,
          account: account(plan),
          url: 'https://hooks.example.com/x',
          events: webhookEventTypes.filter((_, i) => o.filter.includes(i)),
          secretId: `s${secrets++}`,
          endpointsOfAccount: count(),
          plans: defaultPlans,
          allowHttp: false,
          now,
        });
        break;
      case 'remove':
        endpointCommand(endpointSlots[o.slot] as string, {
          type: 'RemoveEndpoint',
          accountId: account().accountId,
          now,
        });
        break;
      case 'enable':
        endpointCommand(endpointSlots[o.slot] as string, {
          type: 'EnableEndpoint',
          accountId: account().accountId,
          now,
        });
        break;
      case 'rotate':
        endpointCommand(endpointSlots[o.slot] as string, {
          type: 'RotateSecret',
          accountId: account().accountId,
          secretId: `s${secrets++}`,
          now,
        });
        break;
      case 'end':
        // A request ends once: a second ending of the same source is the replay below.
        if (!ended.has(o.source)) ended.set(o.source, { ending: o.ending, responses: o.responses, at: now, ids: [] });
        makeDue(o.source);
        break;
      case 'replay':
        makeDue(o.source);
        break;
      case 'start':
        if (chosen !== undefined)
          deliveryCommand(chosen, (endpoint) => ({ type: 'StartAttempt', owner, leaseMs: 30_000, endpoint, now }));
        break;
      case 'succeed':
      case 'fail':
        if (chosen !== undefined) {
          const delivery = deliveries.get(chosen) as DeliveryState;
          const sending = delivery.status === 'sending';
          // Honest: the attempt as the sender that holds it would name it; otherwise a stale or foreign one.
          const attempt = o.honest
            ? sending
              ? delivery.context.attempts
              : delivery.context.attempts + 1
            : delivery.context.attempts;
          const outcome = {
            attempt,
            ...(o.honest && sending ? { owner: delivery.context.owner } : o.honest ? {} : { owner }),
          };
          deliveryCommand(chosen, (endpoint) =>
            o.kind === 'succeed'
              ? { type: 'RecordSuccess', outcome: { ...outcome, status: 200 }, endpoint, now }
              : {
                  type: 'RecordFailure',
                  outcome: { ...outcome, status: 500 },
                  policy,
                  random: o.random,
                  endpoint,
                  now,
                },
          );
        }
        break;
      case 'giveUp':
        if (chosen !== undefined) deliveryCommand(chosen, (endpoint) => ({ type: 'GiveUp', endpoint, now }));
        break;
      case 'redeliver':
        if (chosen !== undefined)
          deliveryCommand(chosen, (endpoint) => ({
            type: 'Redeliver',
            accountId: account().accountId,
            policy,
            endpoint,
            now,
          }));
        break;
    }
  }
  return {
    log: log.map((entry) => entry.event),
    counts: log.map((entry) => entry.endpointsAfter),
    replayMismatches,
    compiledDivergences,
  };
};

const ops = fc.array(op, { minLength: 30, maxLength: 150 });
const plan = fc.constantFrom(...planNames);
const runs = { numRuns: 300 };

describe('The webhook lifecycle rules, over any sequence of commands at any times', () => {
  it('ends each due period of a delivery exactly once: due, one final outcome, and only a redelivery after it', () => {
    fc.assert(
      fc.property(plan, ops, (p, o) => {
        const { log } = simulate(p, o);
        const phase = new Map<string, 'pending' | 'final'>();
        for (const event of log) {
          if (!('deliveryId' in event)) continue;
          const before = phase.get(event.deliveryId);
          if (event.type === 'WebhookDeliveryDue') expect(before).toBeUndefined();
          else if (event.type === 'WebhookRedeliveryRequested') expect(before).toBe('final');
          else expect(before).toBe('pending');
          phase.set(
            event.deliveryId,
            event.type === 'WebhookDelivered' || event.type === 'WebhookDeliveryGaveUp' ? 'final' : 'pending',
          );
        }
      }),
      runs,
    );
  });

  it('makes every attempt within its retention: none begins at or after giveUpAt, and no retry is set for then', () => {
    fc.assert(
      fc.property(plan, ops, (p, o) => {
        const giveUpAt = new Map<string, number>();
        const started = new Map<string, number>();
        for (const event of simulate(p, o).log) {
          if (!('deliveryId' in event)) continue;
          const id = event.deliveryId;
          if (event.type === 'WebhookDeliveryDue' || event.type === 'WebhookRedeliveryRequested')
            giveUpAt.set(id, event.giveUpAt);
          const limit = giveUpAt.get(id) as number;
          if (event.type === 'WebhookAttemptStarted') {
            expect(event.at).toBeLessThan(limit);
            started.set(id, event.attempt);
          }
          if (event.type === 'WebhookAttemptFailed') expect(event.retryAt).toBeLessThan(limit);
          // An outcome of an attempt made without a recorded start: that attempt began when it was recorded.
          const attempt = (event as { attempt?: number }).attempt;
          if (event.type !== 'WebhookAttemptStarted' && attempt !== undefined && started.get(id) !== attempt)
            expect(event.at).toBeLessThan(limit);
        }
      }),
      runs,
    );
  });

  it('gives the same event ids to the same source event every time it is looked at again', () => {
    fc.assert(
      fc.property(plan, ops, (p, o) => {
        const { replayMismatches, compiledDivergences } = simulate(p, o);
        expect(replayMismatches).toEqual([]);
        // The compiled step (what the store folds with) is XState's, accepted or refused, for every step seen.
        expect(compiledDivergences).toEqual([]);
      }),
      runs,
    );
  });

  it("never lets an account's endpoints outnumber its plan's bound", () => {
    fc.assert(
      fc.property(plan, ops, (p, o) => {
        for (const count of simulate(p, o).counts)
          expect(count).toBeLessThanOrEqual(defaultPlans[p].maxWebhookEndpoints);
      }),
      runs,
    );
  });

  it('makes no delivery due at an endpoint once it is removed or while it is disabled', () => {
    fc.assert(
      fc.property(plan, ops, (p, o) => {
        const status = new Map<string, string>();
        for (const event of simulate(p, o).log) {
          if (event.type === 'WebhookDeliveryDue') expect(status.get(event.endpointId)).toBe('enabled');
          if (event.type === 'WebhookEndpointAdded' || event.type === 'WebhookEndpointEnabled')
            status.set(event.endpointId, status.get(event.endpointId) === 'removed' ? 'removed' : 'enabled');
          if (event.type === 'WebhookEndpointDisabled') status.set(event.endpointId, 'disabled');
          if (event.type === 'WebhookEndpointRemoved') status.set(event.endpointId, 'removed');
        }
      }),
      runs,
    );
  });

  it('disables an endpoint only after 3 days of failed attempts with no delivery in between', () => {
    fc.assert(
      fc.property(plan, ops, (p, o) => {
        // When the endpoint's current run of failures began: its first failed attempt since it was added, enabled or
        // last delivered to.
        const runStart = new Map<string, number | undefined>();
        for (const event of simulate(p, o).log) {
          const failedAttempt =
            event.type === 'WebhookAttemptFailed' ||
            (event.type === 'WebhookDeliveryGaveUp' && event.attempt !== undefined);
          if (event.type === 'WebhookEndpointDisabled') {
            const since = runStart.get(event.endpointId);
            expect(since).toBeDefined();
            expect(event.at - (since as number)).toBeGreaterThanOrEqual(disableAfterFailingMs);
          }
          if (
            event.type === 'WebhookEndpointAdded' ||
            event.type === 'WebhookEndpointEnabled' ||
            event.type === 'WebhookDelivered'
          )
            runStart.set(event.endpointId, undefined);
          else if (failedAttempt && runStart.get(event.endpointId) === undefined)
            runStart.set(event.endpointId, event.at);
        }
      }),
      runs,
    );
  });

  it('makes no delivery due at an endpoint removed before the ending (an example of the rule above)', () => {
    const { log } = simulate('free', [
      { kind: 'add', slot: 0, filter: [] },
      { kind: 'remove', slot: 0 },
      { kind: 'end', source: 0, ending: 0, responses: false },
    ]);
    expect(log.map((e) => e.type)).toEqual(['WebhookEndpointAdded', 'WebhookEndpointRemoved']);
  });

  it('does disable an endpoint that keeps failing for 3 days (the rule is reachable, not vacuous)', () => {
    const failing: Op[] = [
      { kind: 'add', slot: 0, filter: [] },
      { kind: 'end', source: 0, ending: 0, responses: false },
    ];
    for (let i = 0; i < 80; i++)
      failing.push({ kind: 'fail', pick: 0, owner: 0, honest: true, random: 0.5 }, { kind: 'wait', ms: hour });
    failing.push({ kind: 'giveUp', pick: 0 });
    const { log } = simulate('free', failing);
    expect(log.filter((e) => e.type === 'WebhookEndpointDisabled')).toHaveLength(1);
  });
});
