import { assign, setup } from 'xstate';
import { emptyContext, type RequestContext } from './context.js';
import { contextChangeOf } from './contextUpdates.js';
import type { RequestEvent } from './events.js';
import {
  attemptsRemain,
  holdsLease,
  isDueAt,
  isExpiredAt,
  isPastDeadlineAt,
  leaseLapsedAt,
  ownsLease,
} from './rules.js';

/** Kept here too for the modules that read it beside the machine (defined in context.ts, which imports nothing). */
export type { RequestContext };

/**
 * The request lifecycle: the only place where its rules live.
 *
 *   none ─RequestQueued→ queued{waiting ⇄ processing} ─→ completed | failed | cancelled ; any ─RequestExpired→ expired
 *
 * No timers: expiry and retries are events that carry the clock's time, so folding the log is deterministic.
 * Work may start or finish only before the request's expiry time; expiry is allowed only at or after it. A cancelled
 * request takes no further work and no result: an answer arriving after the cancellation is refused, so dropped.
 * A request with a deadline (`Cancel-After`) is never started from its deadline on, and only from then may it be
 * cancelled for it (reason `deadline`); until that cancel is written, its running attempt may still finish.
 *
 * Work is leased: a start names its owner and the lease's end. Only the owner of the current attempt may extend it,
 * give it back, or record its outcome (a worker whose lease was taken over records nothing); another worker may take
 * the request over only once the lease has lapsed, or once its owner's process is known to be gone (its lease then
 * ends at once); never the lease's own holder. A failed attempt is retried only while attempts remain; past them the request fails for good, and
 * at once when no retry could mend the failure (an upstream's 404). (rules.ts holds these facts; events of older
 * versions carry no lease and no bound.)
 */
export const requestMachine = setup({
  types: {
    context: {} as RequestContext,
    events: {} as RequestEvent,
  },
  guards: {
    // A cancel before expiry; one for the deadline only once the deadline has come.
    cancellable: ({ context, event }) =>
      !isExpiredAt(context, event.at) &&
      ((event as { reason?: string }).reason !== 'deadline' || isPastDeadlineAt(context, event.at)),
    atOrAfterExpiry: ({ context, event }) => isExpiredAt(context, event.at),
    // In time: before its expiry, and before its deadline if it has one.
    dueInTime: ({ context, event }) =>
      !isExpiredAt(context, event.at) && !isPastDeadlineAt(context, event.at) && isDueAt(context, event.at),
    // A takeover: the lease lapsed, and the one taking it is not its holder (a process never takes over its own).
    lapsedForAnotherInTime: ({ context, event }) =>
      !isExpiredAt(context, event.at) &&
      !isPastDeadlineAt(context, event.at) &&
      leaseLapsedAt(context, event.at) &&
      !ownsLease(context, (event as { owner?: string }).owner),
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
        RequestCancelled: { guard: 'cancellable', target: 'cancelled', actions: 'update' },
      },
      states: {
        waiting: {
          on: {
            RequestProcessingStarted: { guard: 'dueInTime', target: 'processing', actions: 'update' },
          },
        },
        processing: {
          on: {
            // The only way back into processing: another worker takes the request over, as a new attempt, once the
            // lease of the one that had it lapsed (its process died); never the lease's own holder.
            RequestProcessingStarted: {
              guard: 'lapsedForAnotherInTime',
              target: 'processing',
              reenter: true,
              actions: 'update',
            },
            RequestLeaseExtended: { guard: 'heldBeforeExpiry', actions: 'update' },
            // Failover: the attempt's holder moves it to another upstream (no attempt spent).
            RequestUpstreamChanged: { guard: 'heldBeforeExpiry', actions: 'update' },
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
