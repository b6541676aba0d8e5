import { assign, setup } from 'xstate';
import { contextChangeOf } from './contextUpdates.js';
import type { RequestEvent } from './events.js';

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
 */
export const requestMachine = setup({
  types: {
    context: {} as RequestContext,
    events: {} as RequestEvent,
  },
  guards: {
    beforeExpiry: ({ context, event }) => event.at < context.expiresAt,
    atOrAfterExpiry: ({ context, event }) => event.at >= context.expiresAt,
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
            RequestProcessingStarted: { guard: 'beforeExpiry', target: 'processing', actions: 'update' },
          },
        },
        processing: {
          on: {
            // A worker picks the request up again after the process died mid-attempt.
            RequestProcessingStarted: {
              guard: 'beforeExpiry',
              target: 'processing',
              reenter: true,
              actions: 'update',
            },
            RequestAttemptFailed: { target: 'waiting', actions: 'update' },
            RequestCompleted: { guard: 'beforeExpiry', target: '#request.completed', actions: 'update' },
            RequestFailed: { target: '#request.failed', actions: 'update' },
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
