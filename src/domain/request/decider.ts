import { LifecycleViolation } from '../errors.js';
import type { RequestCompleted, RequestEvent, RequestQueued } from './events.js';
import { backoffDelayMs, type RetryPolicy } from './retryPolicy.js';
import { type RequestState, tryEvolve } from './state.js';

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
      /** A worker is free and nothing waits before this request: start its first attempt in the same write. */
      readonly startNow?: boolean;
      /** What the stored text is (see RequestQueued.input). */
      readonly input?: 'messages' | 'chat' | undefined;
      /** The submit's `Idempotency-Key` and the hash of what it was sent with (see commands.ts). */
      readonly idempotency?: { readonly key: string; readonly requestHash: string } | undefined;
      /** The most requests the account may have waiting or being processed (its plan's); absent: no bound. */
      readonly maxQueued?: number | undefined;
    }
  | { readonly type: 'StartAttempt'; readonly reqId: string; readonly now: number }
  | {
      readonly type: 'RecordSuccess';
      readonly reqId: string;
      readonly responseChars: number;
      readonly now: number;
      /** Usage and ending of the answer, when the model told them (see RequestCompleted). */
      readonly inputTokens?: number | undefined;
      readonly outputTokens?: number | undefined;
      readonly finishReason?: string | undefined;
      readonly output?: 'message' | undefined;
    }
  | {
      readonly type: 'RecordFailure';
      readonly reqId: string;
      readonly reason: string;
      readonly policy: RetryPolicy;
      readonly now: number;
    }
  | { readonly type: 'Expire'; readonly reqId: string; readonly now: number }
  | { readonly type: 'Cancel'; readonly reqId: string; readonly now: number };

const eventFor = (state: RequestState, command: RequestCommand): RequestEvent => {
  const { reqId, now: at } = command;
  switch (command.type) {
    case 'Submit': {
      const queued: { -readonly [K in keyof RequestQueued]: RequestQueued[K] } = {
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
      return queued;
    }
    case 'StartAttempt':
      return { type: 'RequestProcessingStarted', reqId, attempt: state.context.attempts + 1, at };
    case 'RecordSuccess': {
      const completed: { -readonly [K in keyof RequestCompleted]: RequestCompleted[K] } = {
        type: 'RequestCompleted',
        reqId,
        responseChars: command.responseChars,
        at,
      };
      // Only what is known: the event (and the view after it) holds no field it does not have.
      if (command.inputTokens !== undefined) completed.inputTokens = command.inputTokens;
      if (command.outputTokens !== undefined) completed.outputTokens = command.outputTokens;
      if (command.finishReason !== undefined) completed.finishReason = command.finishReason;
      if (command.output !== undefined) completed.output = command.output;
      return completed;
    }
    case 'RecordFailure': {
      const attempt = state.context.attempts;
      if (attempt >= command.policy.maxAttempts) {
        return { type: 'RequestFailed', reqId, reason: `gave up after ${attempt} attempts: ${command.reason}`, at };
      }
      const retryAt = at + backoffDelayMs(command.policy, attempt);
      return { type: 'RequestAttemptFailed', reqId, attempt, reason: command.reason, retryAt, at };
    }
    case 'Expire':
      return { type: 'RequestExpired', reqId, at };
    case 'Cancel':
      return { type: 'RequestCancelled', reqId, at };
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

/**
 * Decides what a command means for a request in `state`: the events to append and the state they lead to, or why it
 * is refused. The request machine is asked whether it accepts each event (its step is the fold itself), so the
 * lifecycle rules live in one place. A submit that may start at once is also a `StartAttempt` on the state its own
 * event leaves, when the machine allows it there (otherwise the request is only queued, and a worker takes it from
 * the queue later).
 */
export const decideRequest = (state: RequestState, command: RequestCommand): RequestDecision | LifecycleViolation => {
  const event = eventFor(state, command);
  const next = tryEvolve(state, event);
  if (next === undefined) return refusal(state, command, event);
  if (command.type !== 'Submit' || command.startNow !== true) return { events: [event], state: next };
  const start = eventFor(next, { type: 'StartAttempt', reqId: command.reqId, now: command.now });
  const started = tryEvolve(next, start);
  return started === undefined ? { events: [event], state: next } : { events: [event, start], state: started };
};

/** The events alone (the decider's specification is written in events). */
export const decide = (state: RequestState, command: RequestCommand): readonly RequestEvent[] | LifecycleViolation => {
  const decision = decideRequest(state, command);
  return decision instanceof LifecycleViolation ? decision : decision.events;
};
