import { assign, setup } from 'xstate';
import type { GiveUpReason, WebhookDeliveryEvent } from './events.js';
import type { WebhookEventType } from './eventTypes.js';

/** What the log knows of one delivery, folded from its events. */
export type DeliveryContext = {
  readonly deliveryId: string;
  readonly endpointId: string;
  readonly accountId: string;
  readonly eventId: string;
  readonly eventType: WebhookEventType;
  readonly dataId: string;
  readonly createdAt: number;
  /** When it became due (or was last redelivered), and when it gives up unless an attempt succeeds first. */
  readonly dueAt: number;
  readonly giveUpAt: number;
  /** When the next attempt may be made. */
  readonly availableAt: number;
  /** Attempts made so far, redeliveries included (attempt numbers never repeat). */
  readonly attempts: number;
  readonly redeliveries: number;
  /** The process that holds the current attempt, and until when (see WebhookAttemptStarted). */
  readonly owner?: string | undefined;
  readonly leaseUntil?: number | undefined;
  /** The last attempt's outcome, for the delivery log. */
  readonly lastAttemptAt?: number | undefined;
  readonly lastStatus?: number | undefined;
  readonly lastLatencyMs?: number | undefined;
  readonly lastError?: string | undefined;
  readonly deliveredAt?: number | undefined;
  readonly gaveUpAt?: number | undefined;
  readonly gaveUpReason?: GiveUpReason | undefined;
  /** When its endpoint's recovery made it due ahead of its retry (recovery.ts); cleared by a redelivery. */
  readonly releasedAt?: number | undefined;
  /** Its last attempts' outcomes, oldest first, `keptAttempts` at most: the delivery log shows each (issue 42). */
  readonly recentAttempts?: readonly AttemptRecord[] | undefined;
};

/** One attempt as the delivery log shows it: when it ended, the answer's status (none came: absent), its time, why
 * it failed. */
export type AttemptRecord = {
  readonly attempt: number;
  readonly at: number;
  readonly status?: number | undefined;
  readonly latencyMs?: number | undefined;
  readonly error?: string | undefined;
};

/** How many attempts a delivery's view keeps (its older ones are in the log: `airs replay`). */
export const keptAttempts = 10;

const emptyContext: DeliveryContext = {
  deliveryId: '',
  endpointId: '',
  accountId: '',
  eventId: '',
  eventType: 'request.completed',
  dataId: '',
  createdAt: 0,
  dueAt: 0,
  giveUpAt: 0,
  availableAt: 0,
  attempts: 0,
  redeliveries: 0,
};

type Outcome = { readonly attempt?: number; readonly owner?: string; readonly at: number };

/**
 * The facts the machine's guards are made of. An outcome names its attempt: from `waiting` it is an attempt made
 * without a recorded start (one process, no lease), so it must be the next one, made while due (not before its
 * retry, not once its retention passed), and no owner may be named; from
 * `sending` it must be the started attempt, from its owner (a sender whose lease was taken over records nothing).
 */
const due = (c: DeliveryContext, at: number) => at >= c.availableAt && at < c.giveUpAt;
const lapsed = (c: DeliveryContext, at: number) => c.leaseUntil === undefined || at >= c.leaseUntil;
const unstartedOutcome = (c: DeliveryContext, e: Outcome) =>
  e.owner === undefined && e.attempt === c.attempts + 1 && due(c, e.at);
const heldOutcome = (c: DeliveryContext, e: Outcome) =>
  e.attempt === c.attempts && (c.owner === undefined || e.owner === c.owner);
/** A failure may wait for a retry only if the retry comes before the delivery gives up. */
const retryBeforeGiveUp = (c: DeliveryContext, e: WebhookDeliveryEvent) =>
  e.type === 'WebhookAttemptFailed' && e.retryAt < c.giveUpAt;
/** Giving up with no attempt: once the retention passed, or at once when the endpoint is disabled or removed. */
const mayGiveUpUnattempted = (c: DeliveryContext, e: WebhookDeliveryEvent) =>
  e.type === 'WebhookDeliveryGaveUp' && e.attempt === undefined && (e.reason !== 'retention' || e.at >= c.giveUpAt);

const outcomeChange = (context: DeliveryContext, event: WebhookDeliveryEvent): Partial<DeliveryContext> => {
  const { attempt, status, latencyMs, error } = event as Outcome & {
    status?: number;
    latencyMs?: number;
    error?: string;
  };
  if (attempt === undefined) return {};
  const record: { -readonly [K in keyof AttemptRecord]: AttemptRecord[K] } = { attempt, at: event.at };
  if (status !== undefined) record.status = status;
  if (latencyMs !== undefined) record.latencyMs = latencyMs;
  if (error !== undefined) record.error = error;
  const recentAttempts = [...(context.recentAttempts ?? []), record].slice(-keptAttempts);
  return {
    attempts: attempt,
    lastAttemptAt: event.at,
    lastStatus: status,
    lastLatencyMs: latencyMs,
    lastError: error,
    recentAttempts,
  };
};

const changeOf = (context: DeliveryContext, event: WebhookDeliveryEvent): Partial<DeliveryContext> => {
  switch (event.type) {
    case 'WebhookDeliveryDue': {
      const { deliveryId, endpointId, accountId, eventId, eventType, dataId, createdAt, giveUpAt, at } = event;
      return {
        deliveryId,
        endpointId,
        accountId,
        eventId,
        eventType,
        dataId,
        createdAt,
        giveUpAt,
        dueAt: at,
        availableAt: at,
        attempts: 0,
        redeliveries: 0,
      };
    }
    case 'WebhookAttemptStarted':
      return { attempts: event.attempt, owner: event.owner, leaseUntil: event.leaseUntil };
    case 'WebhookAttemptFailed':
      return { ...outcomeChange(context, event), availableAt: event.retryAt, owner: undefined, leaseUntil: undefined };
    case 'WebhookDelivered':
      return { ...outcomeChange(context, event), deliveredAt: event.at, owner: undefined, leaseUntil: undefined };
    case 'WebhookDeliveryGaveUp':
      return {
        ...outcomeChange(context, event),
        gaveUpAt: event.at,
        gaveUpReason: event.reason,
        owner: undefined,
        leaseUntil: undefined,
      };
    case 'WebhookRedeliveryRequested':
      return {
        dueAt: event.at,
        availableAt: event.at,
        giveUpAt: event.giveUpAt,
        redeliveries: context.redeliveries + 1,
        deliveredAt: undefined,
        gaveUpAt: undefined,
        gaveUpReason: undefined,
        releasedAt: undefined,
      };
    case 'WebhookDeliveryReleased':
      return { availableAt: event.at, releasedAt: event.at };
  }
};

/**
 * A delivery's life (issue 30), the only place its rules live:
 *
 *   none ─Due→ waiting ─AttemptStarted (due)→ sending ─AttemptFailed (retry before giveUpAt)→ waiting
 *                                              sending ─Delivered→ delivered
 *                                              sending ─GaveUp (last attempt failed past the retention,
 *                                                               or its failure disabled the endpoint)→ gave_up
 *   waiting ─AttemptFailed | Delivered | GaveUp (an attempt made with no recorded start)→ as from sending
 *   waiting ─GaveUp (no attempt: retention passed, or endpoint disabled or removed)→ gave_up
 *   delivered | gave_up ─RedeliveryRequested→ waiting (same id, a new retention)
 *   waiting ─Released (once, before its retry: its endpoint recovered)→ waiting, due at once
 *
 * No timers: retries and giving up are events that carry the clock's time. A lapsed lease is taken over by another
 * sender (`AttemptStarted` again); the old holder's outcome is then refused, so one outcome counts per attempt.
 */
export const deliveryMachine = setup({
  types: { context: {} as DeliveryContext, events: {} as WebhookDeliveryEvent },
  guards: {
    due: ({ context, event }) => due(context, event.at),
    lapsedBeforeGiveUp: ({ context, event }) => lapsed(context, event.at) && event.at < context.giveUpAt,
    unstartedRetry: ({ context, event }) =>
      unstartedOutcome(context, event as Outcome) && retryBeforeGiveUp(context, event),
    heldRetry: ({ context, event }) => heldOutcome(context, event as Outcome) && retryBeforeGiveUp(context, event),
    unstarted: ({ context, event }) => unstartedOutcome(context, event as Outcome),
    held: ({ context, event }) => heldOutcome(context, event as Outcome),
    unattempted: ({ context, event }) => mayGiveUpUnattempted(context, event),
    lapsedUnattempted: ({ context, event }) => lapsed(context, event.at) && mayGiveUpUnattempted(context, event),
    /** Made due ahead of its retry once (its endpoint's recovery decides whether: recovery.ts). */
    releasable: ({ context, event }) =>
      context.releasedAt === undefined && event.at < context.availableAt && event.at < context.giveUpAt,
  },
  actions: {
    update: assign(({ context, event }) => changeOf(context, event)),
  },
}).createMachine({
  id: 'webhookDelivery',
  context: emptyContext,
  initial: 'none',
  states: {
    none: { on: { WebhookDeliveryDue: { target: 'waiting', actions: 'update' } } },
    waiting: {
      on: {
        WebhookAttemptStarted: { guard: 'due', target: 'sending', actions: 'update' },
        WebhookDeliveryReleased: { guard: 'releasable', actions: 'update' },
        WebhookAttemptFailed: { guard: 'unstartedRetry', actions: 'update' },
        WebhookDelivered: { guard: 'unstarted', target: 'delivered', actions: 'update' },
        WebhookDeliveryGaveUp: [
          { guard: 'unstarted', target: 'gave_up', actions: 'update' },
          { guard: 'unattempted', target: 'gave_up', actions: 'update' },
        ],
      },
    },
    sending: {
      on: {
        // Another sender takes the attempt over once the lease of the one that had it lapsed (its process died).
        WebhookAttemptStarted: { guard: 'lapsedBeforeGiveUp', target: 'sending', reenter: true, actions: 'update' },
        WebhookAttemptFailed: { guard: 'heldRetry', target: 'waiting', actions: 'update' },
        WebhookDelivered: { guard: 'held', target: 'delivered', actions: 'update' },
        WebhookDeliveryGaveUp: [
          { guard: 'held', target: 'gave_up', actions: 'update' },
          { guard: 'lapsedUnattempted', target: 'gave_up', actions: 'update' },
        ],
      },
    },
    delivered: { on: { WebhookRedeliveryRequested: { target: 'waiting', actions: 'update' } } },
    gave_up: { on: { WebhookRedeliveryRequested: { target: 'waiting', actions: 'update' } } },
  },
});
