import { initialTransition, transition } from 'xstate';
import { DeliveryLifecycleViolation, Refused } from '../errors.js';
import { compileMachine } from '../request/compiledMachine.js';
import { nextRetryDelayMs, type WebhookBackoff } from './backoff.js';
import { type DeliveryContext, deliveryMachine } from './deliveryMachine.js';
import type { DeliveryState, DeliveryStatus } from './deliveryState.js';
import { disableAfterFailingMs, type WebhookEndpointState } from './endpoint.js';
import type {
  AttemptOutcome,
  GiveUpReason,
  WebhookDeliveryDue,
  WebhookDeliveryEvent,
  WebhookEndpointDisabled,
  WebhookEndpointRecovered,
} from './events.js';
import { recoveryOf, releasedByRecovery, releaseOf } from './recovery.js';

export type { DeliveryState, DeliveryStatus } from './deliveryState.js';

type Snapshot = ReturnType<typeof deliveryMachine.resolveState>;

const toState = (snapshot: Snapshot): DeliveryState => ({
  status: snapshot.value as DeliveryStatus,
  context: snapshot.context,
});
const toSnapshot = (state: DeliveryState): Snapshot =>
  deliveryMachine.resolveState({ value: state.status, context: state.context } as never);

export const initialDeliveryState: DeliveryState = toState(initialTransition(deliveryMachine)[0]);

/** The fold step by the book: XState's pure `transition` (checks the compiled step below). */
export const evolveDeliveryWithMachine = (state: DeliveryState, event: WebhookDeliveryEvent): DeliveryState =>
  toSnapshot(state).can(event) ? toState(transition(deliveryMachine, toSnapshot(state), event)[0]) : state;

/** The machine read into a table once (request/compiledMachine.ts): a step is a lookup, not an XState snapshot (every
 * delivery takes three to five steps in the write path, each as costly as the rest of its commit otherwise). */
const compiled = compileMachine<DeliveryContext, WebhookDeliveryEvent>(deliveryMachine);

/** Whether the machine accepts `event` in `state`, guards included: the decider asks before it emits anything. */
export const canApplyToDelivery = (state: DeliveryState, event: WebhookDeliveryEvent): boolean =>
  compiled.can(state.status, state.context, event);

/** The state after `event`; an event the machine does not accept changes nothing. */
export const evolveDelivery = (state: DeliveryState, event: WebhookDeliveryEvent): DeliveryState =>
  (compiled.step(state.status, state.context, event) as DeliveryState | undefined) ?? state;

/** Delivered or given up: no attempt is made until a redelivery. */
export const isFinalDelivery = (status: DeliveryStatus): boolean => status === 'delivered' || status === 'gave_up';

/** Commands on one delivery; each carries the time it is issued at. `endpoint` is the endpoint as the write finds it. */
export type DeliveryCommand =
  | { readonly type: 'MakeDue'; readonly due: WebhookDeliveryDue }
  | {
      readonly type: 'StartAttempt';
      readonly owner: string;
      readonly leaseMs: number;
      readonly endpoint: WebhookEndpointState | undefined;
      readonly now: number;
    }
  | {
      readonly type: 'RecordSuccess';
      readonly outcome: AttemptOutcome;
      readonly endpoint: WebhookEndpointState | undefined;
      readonly now: number;
    }
  | {
      readonly type: 'RecordFailure';
      readonly outcome: AttemptOutcome;
      /** The backoff; its `maxTotalMs` is the retention, which the delivery's `giveUpAt` already holds. */
      readonly policy: WebhookBackoff;
      /** A number in [0, 1) the caller drew for the backoff's jitter. */
      readonly random: number;
      readonly endpoint: WebhookEndpointState | undefined;
      readonly now: number;
    }
  /** The sender found a delivery it may not attempt: its endpoint is disabled or removed, or its retention passed. */
  | { readonly type: 'GiveUp'; readonly endpoint: WebhookEndpointState | undefined; readonly now: number }
  | {
      readonly type: 'Redeliver';
      readonly accountId: string;
      /** Its `maxTotalMs` is the redelivery's new retention. */
      readonly policy: WebhookBackoff;
      readonly endpoint: WebhookEndpointState | undefined;
      readonly now: number;
    };

/** Events a delivery command may also write: its failure can disable the endpoint, its success end the endpoint's run
 * of failures (in the same write). */
export type DeliveryDecision = readonly (WebhookDeliveryEvent | WebhookEndpointDisabled | WebhookEndpointRecovered)[];

/**
 * Whether a failure at `at` makes the endpoint's run of failures 3 days long: it is disabled by that failure. A run
 * begins at the first failed attempt after a delivered one; any delivered attempt ends it.
 */
export const failureDisables = (endpoint: WebhookEndpointState, at: number): boolean =>
  endpoint.status === 'enabled' &&
  endpoint.failingSince !== undefined &&
  at - endpoint.failingSince >= disableAfterFailingMs;

const giveUpReasonOf = (endpoint: WebhookEndpointState | undefined): GiveUpReason | undefined =>
  endpoint === undefined || endpoint.status === 'removed'
    ? 'endpoint_removed'
    : endpoint.status === 'disabled'
      ? 'endpoint_disabled'
      : undefined;

/** Only the fields it has: an event holds no field it does not have. */
const outcomeFields = (outcome: AttemptOutcome): AttemptOutcome => {
  const fields: { -readonly [K in keyof AttemptOutcome]: AttemptOutcome[K] } = { attempt: outcome.attempt };
  if (outcome.owner !== undefined) fields.owner = outcome.owner;
  if (outcome.status !== undefined) fields.status = outcome.status;
  if (outcome.latencyMs !== undefined) fields.latencyMs = outcome.latencyMs;
  if (outcome.error !== undefined) fields.error = outcome.error;
  return fields;
};

const eventsFor = (state: DeliveryState, command: DeliveryCommand): DeliveryDecision | Refused | undefined => {
  const { deliveryId, endpointId } = state.context;
  switch (command.type) {
    case 'MakeDue':
      return [command.due];
    case 'StartAttempt': {
      const reason = giveUpReasonOf(command.endpoint);
      if (reason !== undefined)
        return new Refused({ message: `delivery ${deliveryId}: its endpoint is ${reason.slice('endpoint_'.length)}` });
      const started = {
        type: 'WebhookAttemptStarted' as const,
        deliveryId,
        endpointId,
        attempt: state.context.attempts + 1,
        owner: command.owner,
        leaseUntil: command.now + command.leaseMs,
        at: command.now,
      };
      // Its retry is later, but its endpoint recovered since it failed: due now (recovery.ts).
      return releasedByRecovery(state, command.endpoint, command.now)
        ? [releaseOf(state, command.now), started]
        : [started];
    }
    case 'RecordSuccess': {
      const delivered = {
        type: 'WebhookDelivered' as const,
        deliveryId,
        endpointId,
        ...outcomeFields(command.outcome),
        at: command.now,
      };
      const recovered = recoveryOf(command.endpoint, command.now);
      return recovered === undefined ? [delivered] : [delivered, recovered];
    }
    case 'RecordFailure': {
      const at = command.now;
      const outcome = outcomeFields(command.outcome);
      if (command.endpoint !== undefined && failureDisables(command.endpoint, at)) {
        const { failingSince } = command.endpoint as { failingSince: number };
        return [
          { type: 'WebhookDeliveryGaveUp', deliveryId, endpointId, reason: 'endpoint_disabled', ...outcome, at },
          { type: 'WebhookEndpointDisabled', endpointId, failingSince, at },
        ];
      }
      const reason = giveUpReasonOf(command.endpoint);
      if (reason !== undefined)
        return [{ type: 'WebhookDeliveryGaveUp', deliveryId, endpointId, reason, ...outcome, at }];
      const delay = nextRetryDelayMs(command.policy, outcome.attempt, at - state.context.dueAt, () => command.random);
      const retryAt = at + (delay ?? Number.POSITIVE_INFINITY);
      if (retryAt >= state.context.giveUpAt)
        return [{ type: 'WebhookDeliveryGaveUp', deliveryId, endpointId, reason: 'retention', ...outcome, at }];
      return [{ type: 'WebhookAttemptFailed', deliveryId, endpointId, ...outcome, retryAt, at }];
    }
    case 'GiveUp': {
      const reason =
        giveUpReasonOf(command.endpoint) ?? (command.now >= state.context.giveUpAt ? 'retention' : undefined);
      if (reason === undefined)
        return new Refused({
          message: `delivery ${deliveryId} is still being attempted: it gives up at its retention`,
        });
      const gaveUp = { type: 'WebhookDeliveryGaveUp' as const, deliveryId, endpointId, reason, at: command.now };
      // A delivery that failed until its retention ran out ends a run of failures as long as the retention: when
      // that makes the run 3 days long, the endpoint is disabled now, not at its next failure.
      const { endpoint } = command;
      if (reason === 'retention' && endpoint !== undefined && failureDisables(endpoint, command.now))
        return [
          gaveUp,
          {
            type: 'WebhookEndpointDisabled',
            endpointId,
            failingSince: endpoint.failingSince as number,
            at: command.now,
          },
        ];
      return [gaveUp];
    }
    case 'Redeliver': {
      if (state.context.accountId !== command.accountId || state.status === 'none')
        return new Refused({ message: `no webhook delivery ${deliveryId}` });
      const reason = giveUpReasonOf(command.endpoint);
      if (reason !== undefined)
        return new Refused({
          message:
            reason === 'endpoint_removed'
              ? `delivery ${deliveryId}: its endpoint was removed`
              : `delivery ${deliveryId}: its endpoint is disabled; enable it first`,
        });
      // Already due: nothing to do (scripts may repeat themselves).
      if (!isFinalDelivery(state.status)) return [];
      return [
        {
          type: 'WebhookRedeliveryRequested',
          deliveryId,
          endpointId,
          giveUpAt: command.now + command.policy.maxTotalMs,
          at: command.now,
        },
      ];
    }
    default: {
      const unknown: never = command;
      return unknown;
    }
  }
};

/**
 * Decides a delivery command: its events, each checked by the delivery machine against the state the ones before it
 * leave (an endpoint's disabling is the endpoint's, and goes along), or why it is refused. A delivery made due again
 * by the same source event (a replay, a second node) changes nothing.
 */
export const decideDelivery = (
  state: DeliveryState,
  command: DeliveryCommand,
): DeliveryDecision | Refused | DeliveryLifecycleViolation => {
  if (command.type === 'MakeDue' && state.status !== 'none') return [];
  const events = eventsFor(state, command);
  if (events === undefined || events instanceof Refused) return events ?? [];
  let next = state;
  for (const event of events) {
    if (event.type === 'WebhookEndpointDisabled' || event.type === 'WebhookEndpointRecovered') continue;
    if (!canApplyToDelivery(next, event)) {
      const deliveryId = event.deliveryId;
      return new DeliveryLifecycleViolation({
        deliveryId,
        from: next.status,
        event: event.type,
        message: `webhook delivery ${deliveryId}: ${event.type} is not allowed in state ${next.status}`,
      });
    }
    next = evolveDelivery(next, event);
  }
  return events;
};
