import { LifecycleViolation } from '../errors.js';
import type { ServiceTier } from '../serviceTier.js';
import type {
  RequestCompleted,
  RequestEvent,
  RequestFailed,
  RequestProcessingStarted,
  RequestQueued,
} from './events.js';
import { backoffDelayMs, type RetryPolicy } from './retryPolicy.js';
import { attemptsRemain, isExpiredAt } from './rules.js';
import { type RequestState, tryEvolve } from './state.js';

/** Who works on a request: the process that owns the attempt, and how long its lease lasts from the start. */
export type Lease = { readonly owner: string; readonly leaseMs: number };

/** Where an attempt runs: the upstream of its model it holds a place on, and the model when not the request's own
 * (a fallback). Absent: a model without upstreams. */
export type Placement = { readonly upstream?: string | undefined; readonly servedBy?: string | undefined };

/** The attempt an outcome is for: recorded only while its owner still holds it (the machine fences it). */
export type AttemptRef = { readonly owner?: string | undefined; readonly attempt?: number | undefined };

/** Commands on one request. Each carries the time it is issued at (`now`), so deciding stays pure. */
export type RequestCommand =
  | {
      readonly type: 'Submit';
      readonly reqId: string;
      readonly accountId: string;
      readonly keyId: string;
      readonly model: string;
      readonly promptChars: number;
      readonly ttlMs: number;
      readonly now: number;
      /** A worker of this process is free: start the first attempt in the same write if nothing waits before it
       * (on `upstream`, chosen in the write: commands.ts). */
      readonly startNow?: (Lease & Placement) | undefined;
      /** The prompt prefix's affinity key (promptAffinity.ts). */
      readonly affinity?: number | undefined;
      /** What the stored text is (see RequestQueued.input). */
      readonly input?: 'messages' | 'chat' | 'line' | undefined;
      /** The submit's `Idempotency-Key` and the hash of what it was sent with (see commands.ts). */
      readonly idempotency?: { readonly key: string; readonly requestHash: string } | undefined;
      /** The most requests the account may have waiting or being processed (its plan's); absent: no bound. */
      readonly maxQueued?: number | undefined;
      /** Attempts the request may take before it fails for good. */
      readonly maxAttempts?: number | undefined;
      /** The caller's metadata, as the JSON text of the object (see RequestQueued.metadata). */
      readonly metadata?: string | undefined;
      /** A line of a batch: the batch and the line's `custom_id` (see RequestQueued). */
      readonly batchId?: string | undefined;
      readonly customId?: string | undefined;
      /** The face it came in by, when it is the Responses face (see RequestQueued.face). */
      readonly face?: 'responses' | undefined;
      /** `Cancel-After` (contract 20): cancelled this long after its creation if it has not ended by then. */
      readonly cancelAfterMs?: number | undefined;
      /** The service tier it is served at (contract 20; tierServed); absent or `default`: default. */
      readonly serviceTier?: ServiceTier | undefined;
    }
  | ({ readonly type: 'StartAttempt'; readonly reqId: string; readonly now: number } & Partial<Lease> & Placement)
  | ({
      readonly type: 'RecordSuccess';
      readonly reqId: string;
      readonly responseChars: number;
      readonly now: number;
      /** Usage and ending of the answer, when the model told them (see RequestCompleted). */
      readonly inputTokens?: number | undefined;
      readonly outputTokens?: number | undefined;
      readonly finishReason?: string | undefined;
      readonly output?: 'message' | undefined;
      readonly firstTokenMs?: number | undefined;
    } & AttemptRef)
  | ({
      readonly type: 'RecordFailure';
      readonly reqId: string;
      readonly reason: string;
      /** The backoff; its `maxAttempts` bounds requests that do not carry their own bound (older versions'). */
      readonly policy: RetryPolicy;
      readonly now: number;
      /** What the caller is told if the request fails for good by this failure (see RequestFailed.said). */
      readonly said?: string | undefined;
      /** No retry could mend it: the request fails for good now, attempts left or not. */
      readonly permanent?: boolean | undefined;
    } & AttemptRef)
  | {
      readonly type: 'ExtendLease';
      readonly reqId: string;
      readonly owner: string;
      readonly attempt: number;
      readonly leaseMs: number;
      readonly now: number;
    }
  | {
      readonly type: 'Release';
      readonly reqId: string;
      readonly owner: string;
      readonly attempt: number;
      readonly now: number;
    }
  | {
      /** The process named `owner` no longer exists (known on one machine): the lease of its attempt ends now. */
      readonly type: 'OwnerGone';
      readonly reqId: string;
      readonly owner: string;
      readonly attempt: number;
      readonly now: number;
    }
  | {
      /** Failover (domain/failOver.ts decides where to): the holder's attempt moves to upstream `to`. */
      readonly type: 'MoveUpstream';
      readonly reqId: string;
      readonly owner: string;
      readonly attempt: number;
      readonly now: number;
      readonly to: string;
      readonly reason: string;
    }
  | { readonly type: 'Expire'; readonly reqId: string; readonly now: number }
  /** `deadline`: its deadline passed (the machine allows it only from then on); absent: its account or an operator. */
  | { readonly type: 'Cancel'; readonly reqId: string; readonly now: number; readonly reason?: 'deadline' | undefined }
  /** Its time is up (the sweeper): expired once its lifetime ran out, else cancelled for its deadline. */
  | { readonly type: 'TimeUp'; readonly reqId: string; readonly now: number };

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

const startOf = (
  state: RequestState,
  reqId: string,
  at: number,
  lease: Partial<Lease> & Placement,
): RequestProcessingStarted => {
  const started: Mutable<RequestProcessingStarted> = {
    type: 'RequestProcessingStarted',
    reqId,
    attempt: state.context.attempts + 1,
    at,
  };
  if (lease.owner !== undefined) started.owner = lease.owner;
  if (lease.leaseMs !== undefined) started.leaseUntil = at + lease.leaseMs;
  if (lease.upstream !== undefined) started.upstream = lease.upstream;
  // On its own model after a fallback's attempt: named, so the view no longer says the fallback serves it.
  const servedBy = lease.servedBy ?? (state.context.servedBy === undefined ? undefined : state.context.model);
  if (servedBy !== undefined) started.servedBy = servedBy;
  return started;
};

/** Only the fields it has: an event (and the view after it) holds no field it does not have. */
const withAttempt = <E extends object>(event: E, ref: AttemptRef): E => {
  const tagged = event as Mutable<AttemptRef>;
  if (ref.owner !== undefined) tagged.owner = ref.owner;
  if (ref.attempt !== undefined) tagged.attempt = ref.attempt;
  return event;
};

const eventFor = (state: RequestState, command: RequestCommand): RequestEvent => {
  const { reqId, now: at } = command;
  switch (command.type) {
    case 'Submit': {
      const queued: Mutable<RequestQueued> = {
        type: 'RequestQueued',
        reqId,
        accountId: command.accountId,
        keyId: command.keyId,
        model: command.model,
        promptChars: command.promptChars,
        at,
        expiresAt: at + command.ttlMs,
      };
      if (command.input !== undefined) queued.input = command.input;
      if (command.idempotency !== undefined) {
        queued.idempotencyKey = command.idempotency.key;
        queued.requestHash = command.idempotency.requestHash;
      }
      if (command.maxAttempts !== undefined) queued.maxAttempts = command.maxAttempts;
      if (command.metadata !== undefined) queued.metadata = command.metadata;
      if (command.batchId !== undefined) queued.batchId = command.batchId;
      if (command.customId !== undefined) queued.customId = command.customId;
      if (command.face !== undefined) queued.face = command.face;
      if (command.affinity !== undefined) queued.affinity = command.affinity;
      if (command.cancelAfterMs !== undefined) queued.deadlineAt = at + command.cancelAfterMs;
      if (command.serviceTier !== undefined && command.serviceTier !== 'default')
        queued.serviceTier = command.serviceTier;
      return queued;
    }
    case 'StartAttempt':
      return startOf(state, reqId, at, command);
    case 'RecordSuccess': {
      const completed: Mutable<RequestCompleted> = {
        type: 'RequestCompleted',
        reqId,
        responseChars: command.responseChars,
        at,
      };
      if (command.inputTokens !== undefined) completed.inputTokens = command.inputTokens;
      if (command.outputTokens !== undefined) completed.outputTokens = command.outputTokens;
      if (command.finishReason !== undefined) completed.finishReason = command.finishReason;
      if (command.output !== undefined) completed.output = command.output;
      if (command.firstTokenMs !== undefined) completed.firstTokenMs = Math.max(0, Math.round(command.firstTokenMs));
      return withAttempt(completed, command);
    }
    case 'RecordFailure': {
      const attempt = state.context.attempts;
      if (command.permanent === true || !attemptsRemain(state.context, command.policy.maxAttempts)) {
        const failed: Mutable<RequestFailed> = {
          type: 'RequestFailed',
          reqId,
          reason:
            command.permanent === true
              ? `failed for good at attempt ${attempt}: ${command.reason}`
              : `gave up after ${attempt} attempts: ${command.reason}`,
          at,
        };
        withAttempt(failed, command);
        if (command.said !== undefined) failed.said = command.said;
        if (command.permanent === true) failed.permanent = true;
        return failed;
      }
      const retryAt = at + backoffDelayMs(command.policy, attempt);
      const retry = { type: 'RequestAttemptFailed' as const, reqId, attempt, reason: command.reason, retryAt, at };
      return command.owner === undefined ? retry : { ...retry, owner: command.owner };
    }
    case 'ExtendLease':
      return {
        type: 'RequestLeaseExtended',
        reqId,
        owner: command.owner,
        attempt: command.attempt,
        leaseUntil: at + command.leaseMs,
        at,
      };
    case 'Release':
      return { type: 'RequestReleased', reqId, owner: command.owner, attempt: command.attempt, at };
    case 'OwnerGone':
      return { type: 'RequestOwnerGone', reqId, owner: command.owner, attempt: command.attempt, at };
    case 'MoveUpstream':
      return {
        type: 'RequestUpstreamChanged',
        reqId,
        owner: command.owner,
        attempt: command.attempt,
        from: state.context.upstream ?? '',
        to: command.to,
        reason: command.reason,
        at,
      };
    case 'Expire':
      return { type: 'RequestExpired', reqId, at };
    case 'Cancel':
      return command.reason === undefined
        ? { type: 'RequestCancelled', reqId, at }
        : { type: 'RequestCancelled', reqId, at, reason: command.reason };
    case 'TimeUp':
      return isExpiredAt(state.context, at)
        ? { type: 'RequestExpired', reqId, at }
        : { type: 'RequestCancelled', reqId, at, reason: 'deadline' };
    default: {
      const unknown: never = command;
      throw new Error(`unknown command ${(unknown as { type: string }).type}`);
    }
  }
};

const refusal = (state: RequestState, command: RequestCommand, event: RequestEvent) =>
  new LifecycleViolation({
    reqId: command.reqId,
    from: state.status,
    event: event.type,
    message: `request ${command.reqId}: ${event.type} is not allowed in state ${state.status}`,
  });

/** What a command comes to: its events and the state they leave the request in. */
export type RequestDecision = { readonly events: readonly RequestEvent[]; readonly state: RequestState };

/** Asking for what already holds changes nothing and is no error: two servers may expire or cancel at once (a
 * request cancelled before its time was up stays so until it expires). */
const alreadyHolds = (state: RequestState, command: RequestCommand): boolean =>
  ((command.type === 'Expire' || command.type === 'TimeUp') && state.status === 'expired') ||
  (command.type === 'Cancel' && state.status === 'cancelled') ||
  (command.type === 'TimeUp' && state.status === 'cancelled' && !isExpiredAt(state.context, command.now));

/**
 * Decides what a command means for a request in `state`: the events to append and the state they lead to, or why it
 * is refused. The request machine is asked whether it accepts each event (its step is the fold itself), so the
 * lifecycle rules live in one place. A submit that may start at once is also a start on the state its own event
 * leaves, when the machine allows it there (otherwise the request is only queued, and a worker takes it later).
 */
export const decideRequest = (state: RequestState, command: RequestCommand): RequestDecision | LifecycleViolation => {
  if (alreadyHolds(state, command)) return { events: [], state };
  const event = eventFor(state, command);
  const next = tryEvolve(state, event);
  if (next === undefined) return refusal(state, command, event);
  if (command.type !== 'Submit' || command.startNow === undefined) return { events: [event], state: next };
  const start = startOf(next, command.reqId, command.now, command.startNow);
  const started = tryEvolve(next, start);
  return started === undefined ? { events: [event], state: next } : { events: [event, start], state: started };
};

/** The events alone (the decider's specification is written in events). */
export const decide = (state: RequestState, command: RequestCommand): readonly RequestEvent[] | LifecycleViolation => {
  const decision = decideRequest(state, command);
  return decision instanceof LifecycleViolation ? decision : decision.events;
};
