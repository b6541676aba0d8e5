import { assign, setup } from 'xstate';
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
  readonly lastError?: string;
  readonly responseChars?: number;
  readonly completedAt?: number;
  readonly failedAt?: number;
  readonly failureReason?: string;
  readonly expiredAt?: number;
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
 *   none ─RequestQueued→ queued{waiting ⇄ processing} ─→ completed | failed ; any ─RequestExpired→ expired
 *
 * No timers: expiry and retries are events that carry the clock's time, so folding the log is deterministic.
 * Work may start or finish only before the request's expiry time; expiry is allowed only at or after it.
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
    recordQueued: assign(({ event }) => {
      if (event.type !== 'RequestQueued') return {};
      return {
        reqId: event.reqId,
        accountId: event.accountId,
        keyId: event.keyId,
        model: event.model,
        promptChars: event.promptChars,
        createdAt: event.at,
        expiresAt: event.expiresAt,
        attempts: 0,
        availableAt: event.at,
      };
    }),
    recordAttemptStarted: assign(({ context, event }) =>
      event.type === 'RequestProcessingStarted' ? { attempts: Math.max(context.attempts + 1, event.attempt) } : {},
    ),
    recordAttemptFailed: assign(({ event }) =>
      event.type === 'RequestAttemptFailed' ? { availableAt: event.retryAt, lastError: event.reason } : {},
    ),
    recordCompleted: assign(({ event }) =>
      event.type === 'RequestCompleted' ? { responseChars: event.responseChars, completedAt: event.at } : {},
    ),
    recordFailed: assign(({ event }) =>
      event.type === 'RequestFailed' ? { failedAt: event.at, failureReason: event.reason } : {},
    ),
    recordExpired: assign(({ event }) => ({ expiredAt: event.at })),
  },
}).createMachine({
  id: 'request',
  context: emptyContext,
  initial: 'none',
  states: {
    none: {
      on: { RequestQueued: { target: 'queued', actions: 'recordQueued' } },
    },
    queued: {
      initial: 'waiting',
      on: { RequestExpired: { guard: 'atOrAfterExpiry', target: 'expired', actions: 'recordExpired' } },
      states: {
        waiting: {
          on: {
            RequestProcessingStarted: { guard: 'beforeExpiry', target: 'processing', actions: 'recordAttemptStarted' },
          },
        },
        processing: {
          on: {
            // A worker picks the request up again after the process died mid-attempt.
            RequestProcessingStarted: {
              guard: 'beforeExpiry',
              target: 'processing',
              reenter: true,
              actions: 'recordAttemptStarted',
            },
            RequestAttemptFailed: { target: 'waiting', actions: 'recordAttemptFailed' },
            RequestCompleted: { guard: 'beforeExpiry', target: '#request.completed', actions: 'recordCompleted' },
            RequestFailed: { target: '#request.failed', actions: 'recordFailed' },
          },
        },
      },
    },
    completed: {
      on: { RequestExpired: { guard: 'atOrAfterExpiry', target: 'expired', actions: 'recordExpired' } },
    },
    failed: {
      on: { RequestExpired: { guard: 'atOrAfterExpiry', target: 'expired', actions: 'recordExpired' } },
    },
    expired: { type: 'final' },
  },
});

export type RequestMachine = typeof requestMachine;
