import type { RequestEvent } from './events.js';
import type { RequestContext } from './machine.js';

type Update<T extends RequestEvent['type']> = (
  context: RequestContext,
  event: Extract<RequestEvent, { type: T }>,
) => RequestContext;

/**
 * What each event does to a request's data once the machine has accepted it. The machine's `assign` actions call
 * these, and so does the fast fold in state.ts: one definition for both.
 */
export const contextUpdates: { readonly [T in RequestEvent['type']]: Update<T> } = {
  RequestQueued: (_context, event) => ({
    reqId: event.reqId,
    accountId: event.accountId,
    keyId: event.keyId,
    model: event.model,
    promptChars: event.promptChars,
    createdAt: event.at,
    expiresAt: event.expiresAt,
    attempts: 0,
    availableAt: event.at,
  }),
  RequestProcessingStarted: (context, event) => ({
    ...context,
    attempts: Math.max(context.attempts + 1, event.attempt),
  }),
  RequestAttemptFailed: (context, event) => ({ ...context, availableAt: event.retryAt, lastError: event.reason }),
  RequestCompleted: (context, event) => ({ ...context, responseChars: event.responseChars, completedAt: event.at }),
  RequestFailed: (context, event) => ({ ...context, failedAt: event.at, failureReason: event.reason }),
  RequestExpired: (context, event) => ({ ...context, expiredAt: event.at }),
};

export const applyContextUpdate = (context: RequestContext, event: RequestEvent): RequestContext =>
  (contextUpdates[event.type] as (c: RequestContext, e: RequestEvent) => RequestContext)(context, event);
