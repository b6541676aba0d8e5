import type { RequestContext } from './context.js';
import type { RequestEvent } from './events.js';

type Change<T extends RequestEvent['type']> = (
  context: RequestContext,
  event: Extract<RequestEvent, { type: T }>,
) => Partial<RequestContext>;

/**
 * What each event changes in a request's data once the machine has accepted it: only the fields that change. The
 * machine's `assign` action returns these and XState merges them over the context (so does the compiled fold,
 * which reads that assign action). Partial changes also keep the step fast: in V8, `{...context, newField}` costs
 * about ten times a merge with `Object.assign`.
 */
export const contextChanges: { readonly [T in RequestEvent['type']]: Change<T> } = {
  RequestQueued: (_context, event) => {
    const change: { -readonly [K in keyof RequestContext]?: RequestContext[K] } = {
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
    // Only when present: a view holds no field it does not have (its encoding, verify and the fold compare them).
    if (event.input !== undefined) change.input = event.input;
    if (event.idempotencyKey !== undefined) change.idempotencyKey = event.idempotencyKey;
    if (event.requestHash !== undefined) change.requestHash = event.requestHash;
    if (event.maxAttempts !== undefined) change.maxAttempts = event.maxAttempts;
    if (event.metadata !== undefined) change.metadata = event.metadata;
    if (event.batchId !== undefined) change.batchId = event.batchId;
    if (event.customId !== undefined) change.customId = event.customId;
    if (event.face !== undefined) change.face = event.face;
    if (event.affinity !== undefined) change.affinity = event.affinity;
    if (event.deadlineAt !== undefined) change.deadlineAt = event.deadlineAt;
    if (event.serviceTier !== undefined) change.serviceTier = event.serviceTier;
    return change;
  },
  RequestProcessingStarted: (context, event) => {
    const change: { -readonly [K in keyof RequestContext]?: RequestContext[K] } = {
      attempts: Math.max(context.attempts + 1, event.attempt),
      startedAt: event.at,
    };
    if (event.owner !== undefined) change.owner = event.owner;
    if (event.leaseUntil !== undefined) change.leaseUntil = event.leaseUntil;
    // Only when present (a view holds no field it does not have): a start after a fallback's names its own model.
    if (event.upstream !== undefined) change.upstream = event.upstream;
    if (event.servedBy !== undefined) change.servedBy = event.servedBy;
    return change;
  },
  RequestUpstreamChanged: (_context, event) => ({ upstream: event.to }),
  RequestLeaseExtended: (_context, event) => ({ leaseUntil: event.leaseUntil }),
  // Back in the queue at once: its worker stopped, nothing failed.
  RequestReleased: (_context, event) => ({ availableAt: event.at }),
  // Its owner is gone: the lease ends now (lapsed), and the request is taken over as any lapsed lease is.
  RequestOwnerGone: (_context, event) => ({ leaseUntil: event.at }),
  RequestAttemptFailed: (_context, event) => ({ availableAt: event.retryAt, lastError: event.reason }),
  RequestCompleted: (_context, event) => {
    const change: { -readonly [K in keyof RequestContext]?: RequestContext[K] } = {
      responseChars: event.responseChars,
      completedAt: event.at,
    };
    // Only when present, as for RequestQueued: events written before usage was recorded leave views as they were.
    if (event.inputTokens !== undefined) change.inputTokens = event.inputTokens;
    if (event.outputTokens !== undefined) change.outputTokens = event.outputTokens;
    if (event.finishReason !== undefined) change.finishReason = event.finishReason;
    if (event.output !== undefined) change.output = event.output;
    return change;
  },
  RequestFailed: (_context, event) =>
    event.said === undefined
      ? { failedAt: event.at, failureReason: event.reason }
      : { failedAt: event.at, failureReason: event.reason, failureSaid: event.said },
  RequestExpired: (_context, event) => ({ expiredAt: event.at }),
  RequestCancelled: (_context, event) =>
    event.reason === undefined ? { cancelledAt: event.at } : { cancelledAt: event.at, cancelReason: event.reason },
};

export const contextChangeOf = (context: RequestContext, event: RequestEvent): Partial<RequestContext> =>
  (contextChanges[event.type] as (c: RequestContext, e: RequestEvent) => Partial<RequestContext>)(context, event);
