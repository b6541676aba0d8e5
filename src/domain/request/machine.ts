import { assign, setup } from 'xstate';
import { contextChangeOf } from './contextUpdates.js';
import type { RequestEvent } from './events.js';
import { attemptsRemain, holdsLease, isDueAt, isExpiredAt, leaseLapsedAt } from './rules.js';

/**
 * What the log knows of one request, folded from its events. Text payloads are not here (see events.ts).
 */
export type RequestContext = {
  readonly reqId: string;
  readonly accountId: string;
  readonly keyId: string;
  readonly model: string;
  readonly promptChars: number;
  readonly createdAt: number;
  readonly expiresAt: number;
  /** Attempts started so far (a restart after a crash counts as a new attempt). */
  readonly attempts: number;
  /** When the request may next be picked up by a worker. */
  readonly availableAt: number;
  /** When its current (or last) attempt started. */
  readonly startedAt?: number;
  readonly lastError?: string;
  readonly responseChars?: number;
  readonly completedAt?: number;
  readonly failedAt?: number;
  readonly failureReason?: string;
  /** What the caller is told of the failure (see RequestFailed.said). */
  readonly failureSaid?: string;
  readonly expiredAt?: number;
  /** What the stored input text is (see events.ts). */
  readonly input?: 'messages' | 'chat';
  readonly idempotencyKey?: string;
  readonly requestHash?: string;
  readonly cancelledAt?: number;
  /** Usage and ending of the answer, from `RequestCompleted` (see events.ts). */
  readonly inputTokens?: number;
  readonly outputTokens?: number;
  readonly finishReason?: string;
  readonly output?: 'message';
  /** The process that holds the current (or last) attempt, and until when (see RequestProcessingStarted). */
  readonly owner?: string;
  readonly leaseUntil?: number;
  /** Attempts the request may take before it fails for good. */
  readonly maxAttempts?: number;
  /** The caller's metadata, as the JSON text of the object (see RequestQueued). */
  readonly metadata?: string;
  /** A line of a batch: the batch, and its `custom_id` (see RequestQueued). */
  readonly batchId?: string;
  readonly customId?: string;
  /** Made by the Responses face (see RequestQueued.face). */
  readonly face?: 'responses';
};

const emptyContext: RequestContext = {
  reqId: '',
  accountId: '',
  keyId: '',
  model: '',
  promptChars: 0,
  createdAt: 0,
  expiresAt: 0,
  attempts: 0,
  availableAt: 0,
};

/**
 * The request lifecycle: the only place where its rules live.
 *
 *   none ─RequestQueued→ queued{waiting ⇄ processing} ─→ completed | failed | cancelled ; any ─RequestExpired→ expired
 *
 * No timers: expiry and retries are events that carry the clock's time, so folding the log is deterministic.
 * Work may start or finish only before the request's expiry time; expiry is allowed only at or after it. A cancelled
 * request takes no further work and no result: an answer arriving after the cancellation is refused, so dropped.
 *
 * Work is leased: a start names its owner and the lease's end. Only the owner of the current attempt may extend it,
 * give it back, or record its outcome (a worker whose lease was taken over records nothing); another worker may take
 * the request over only once the lease has lapsed, or once its owner's process is known to be gone (its lease then
 * ends at once). A failed attempt is retried only while attempts remain; past them the request fails for good, and
 * at once when no retry could mend the failure (an upstream's 404). (rules.ts holds these facts; events of older
 * versions carry no lease and no bound.)
 */
export const requestMachine = setup({
  types: {
    context: {} as RequestContext,
    events: {} as RequestEvent,
  },
  guards: {
    beforeExpiry: ({ context, event }) => !isExpiredAt(context, event.at),
    atOrAfterExpiry: ({ context, event }) => isExpiredAt(context, event.at),
    dueBeforeExpiry: ({ context, event }) => !isExpiredAt(context, event.at) && isDueAt(context, event.at),
    lapsedBeforeExpiry: ({ context, event }) => !isExpiredAt(context, event.at) && leaseLapsedAt(context, event.at),
    heldBeforeExpiry: ({ context, event }) => !isExpiredAt(context, event.at) && holdsLease(context, event),
    held: ({ context, event }) => holdsLease(context, event),
    heldUnlapsed: ({ context, event }) => holdsLease(context, event) && !leaseLapsedAt(context, event.at),
    heldWithAttemptsLeft: ({ context, event }) => holdsLease(context, event) && attemptsRemain(context),
    heldOrLapsedWithoutAttemptsLeft: ({ context, event }) =>
      (holdsLease(context, event) || leaseLapsedAt(context, event.at)) &&
      (context.maxAttempts === undefined || !attemptsRemain(context)),
    heldAndPermanent: ({ context, event }) =>
      holdsLease(context, event) && (event as { permanent?: true }).permanent === true,
  },
  actions: {
    // Every accepted event changes the data the same way, defined once in contextUpdates.ts; XState merges it.
    update: assign(({ context, event }) => contextChangeOf(context, event)),
  },
}).createMachine({
  id: 'request',
  context: emptyContext,
  initial: 'none',
  states: {
    none: {
      on: { RequestQueued: { target: 'queued', actions: 'update' } },
    },
    queued: {
      initial: 'waiting',
      on: {
        RequestExpired: { guard: 'atOrAfterExpiry', target: 'expired', actions: 'update' },
        RequestCancelled: { guard: 'beforeExpiry', target: 'cancelled', actions: 'update' },
      },
      states: {
        waiting: {
          on: {
            RequestProcessingStarted: { guard: 'dueBeforeExpiry', target: 'processing', actions: 'update' },
          },
        },
        processing: {
          on: {
            // Another worker takes the request over once the lease of the one that had it lapsed (its process died).
            RequestProcessingStarted: {
              guard: 'lapsedBeforeExpiry',
              target: 'processing',
              reenter: true,
              actions: 'update',
            },
            RequestLeaseExtended: { guard: 'heldBeforeExpiry', actions: 'update' },
            RequestReleased: { guard: 'held', target: 'waiting', actions: 'update' },
            // The attempt's process is known to be gone (same machine): its lease ends now, so that the request is
            // taken over (or given up, with no attempt left) at once, as a lapsed lease would be later. Only for the
            // current attempt and while its lease runs: once ended, another notice changes nothing.
            RequestOwnerGone: { guard: 'heldUnlapsed', actions: 'update' },
            RequestAttemptFailed: { guard: 'heldWithAttemptsLeft', target: 'waiting', actions: 'update' },
            RequestCompleted: { guard: 'heldBeforeExpiry', target: '#request.completed', actions: 'update' },
            // Given up: by the worker whose last attempt failed, or by the one that finds a lapsed lease and no
            // attempt left to take it over with; or failed for good by the worker whose attempt no retry could mend.
            RequestFailed: [
              { guard: 'heldOrLapsedWithoutAttemptsLeft', target: '#request.failed', actions: 'update' },
              { guard: 'heldAndPermanent', target: '#request.failed', actions: 'update' },
            ],
          },
        },
      },
    },
    completed: {
      on: { RequestExpired: { guard: 'atOrAfterExpiry', target: 'expired', actions: 'update' } },
    },
    failed: {
      on: { RequestExpired: { guard: 'atOrAfterExpiry', target: 'expired', actions: 'update' } },
    },
    cancelled: {
      on: { RequestExpired: { guard: 'atOrAfterExpiry', target: 'expired', actions: 'update' } },
    },
    expired: { type: 'final' },
  },
});
