import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assign, transition } from 'xstate';
import { type CompiledMachine, compileMachine } from '../../src/domain/request/compiledMachine.js';
import { contextChangeOf } from '../../src/domain/request/contextUpdates.js';
import type { RequestEvent } from '../../src/domain/request/events.js';
import { type RequestContext, requestMachine } from '../../src/domain/request/machine.js';
import {
  canApply,
  evolve,
  evolveInPlace,
  evolveWithMachine,
  initialRequestState,
  type RequestState,
  type RequestStatus,
  toSnapshot,
  toState,
} from '../../src/domain/request/state.js';

const reqId = 'req_x';
const expiresAt = 1_000;
/** Event times just before, at and just after the expiry, and further away: every guard decides both ways. */
const time = fc.oneof(fc.constantFrom(expiresAt - 1, expiresAt, expiresAt + 1), fc.integer({ min: 0, max: 2_000 }));

const event: fc.Arbitrary<RequestEvent> = fc.oneof(
  fc.record({ at: time, ttl: fc.integer({ min: 1, max: 1_500 }), extras: fc.boolean() }).map(
    ({ at, ttl, extras }): RequestEvent => ({
      type: 'RequestQueued',
      reqId,
      accountId: 'a',
      keyId: 'k',
      model: 'm',
      promptChars: 3,
      at,
      expiresAt: at + ttl,
      // A conversation submitted with an idempotency key: the optional fields must fold like the others.
      ...(extras
        ? { input: 'chat' as const, idempotencyKey: 'idem-1', requestHash: 'hash-1', metadata: '{"team":"a"}' }
        : {}),
    }),
  ),
  fc
    .record({ at: time, attempt: fc.integer({ min: 1, max: 5 }) })
    .map(({ at, attempt }): RequestEvent => ({ type: 'RequestProcessingStarted', reqId, attempt, at })),
  fc.record({ at: time, retryAt: time }).map(
    ({ at, retryAt }): RequestEvent => ({
      type: 'RequestAttemptFailed',
      reqId,
      attempt: 1,
      reason: 'x',
      retryAt,
      at,
    }),
  ),
  time.map((at): RequestEvent => ({ type: 'RequestCompleted', reqId, responseChars: 7, at })),
  time.map(
    (at): RequestEvent => ({
      type: 'RequestCompleted',
      reqId,
      responseChars: 0,
      at,
      inputTokens: 5,
      outputTokens: 2,
      finishReason: 'tool_calls',
      output: 'message',
    }),
  ),
  time.map((at): RequestEvent => ({ type: 'RequestFailed', reqId, reason: 'y', at })),
  time.map((at): RequestEvent => ({ type: 'RequestExpired', reqId, at })),
  time.map((at): RequestEvent => ({ type: 'RequestCancelled', reqId, at })),
);

const statuses: RequestStatus[] = ['none', 'waiting', 'processing', 'completed', 'failed', 'cancelled', 'expired'];
const state: fc.Arbitrary<RequestState> = fc
  .record({
    status: fc.constantFrom(...statuses),
    createdAt: fc.integer({ min: 0, max: expiresAt - 1 }),
    attempts: fc.integer({ min: 0, max: 4 }),
    availableAt: time,
  })
  .map(({ status, createdAt, attempts, availableAt }) => {
    const context: RequestContext = {
      reqId,
      accountId: 'a',
      keyId: 'k',
      model: 'm',
      promptChars: 3,
      createdAt,
      expiresAt,
      attempts,
      availableAt,
    };
    return { status, context };
  });

/** Same status, same context, same keys in the same order (stored views are compared as encoded bytes). */
const exactly = (value: RequestState) => JSON.stringify(value);

/** A step built on `compiled`, next to XState's own `transition` of `machine`: the first state and event where they
 * differ, if any. */
const divergence = (compiled: CompiledMachine, machine: typeof requestMachine) =>
  fc.check(
    fc.property(state, event, (from, e) => {
      const snapshot = machine.resolveState({
        value: from.status === 'waiting' || from.status === 'processing' ? { queued: from.status } : from.status,
        context: from.context,
      } as never);
      const expected = toState(transition(machine, snapshot, e)[0]);
      const stepped = compiled.step(from.status, from.context, e);
      const after = stepped === undefined ? from : (stepped as RequestState);
      return compiled.can(from.status, from.context, e) === snapshot.can(e) && exactly(after) === exactly(expected);
    }),
    { numRuns: 2_000, seed: 42 },
  );

/** Variants of the machine with one rule changed, to show the check notices. */
const looserGuard = requestMachine.provide({
  guards: { cancellable: ({ context, event: e }) => e.at <= context.expiresAt },
});
const forgetfulUpdate = requestMachine.provide({
  actions: {
    update: assign(({ context, event: e }) => ({ ...contextChangeOf(context, e), lastError: 'forgotten' })),
  },
});

describe('The compiled fold step', () => {
  it('accepts exactly the events XState accepts and gives exactly the state its transition gives, from any state', () => {
    fc.assert(
      fc.property(state, event, (from, e) => {
        expect(canApply(from, e)).toBe(toSnapshot(from).can(e));
        expect(exactly(evolve(from, e))).toBe(exactly(evolveWithMachine(from, e)));
      }),
      { numRuns: 3_000 },
    );
  });

  it('folds any sequence of events to exactly the state XState folds it to', () => {
    fc.assert(
      fc.property(fc.array(event, { maxLength: 30 }), (events) => {
        let fast: RequestState = initialRequestState;
        let machine: RequestState = initialRequestState;
        for (const e of events) {
          fast = evolve(fast, e);
          machine = evolveWithMachine(machine, e);
          expect(exactly(fast)).toBe(exactly(machine));
        }
      }),
      { numRuns: 500 },
    );
  });

  it('changes a state it owns in place exactly as it makes a new one, from any state', () => {
    fc.assert(
      fc.property(state, event, (from, e) => {
        const expected = evolve(from, e);
        const owned = { status: from.status, context: { ...from.context } };
        expect(evolveInPlace(owned, e)).toBe(expected !== from);
        expect(exactly(owned)).toBe(exactly(expected));
      }),
      { numRuns: 3_000 },
    );
  });

  it('is read off the machine: compiled from any variant of it, it matches that variant', () => {
    expect(divergence(compileMachine(requestMachine), requestMachine).failed).toBe(false);
    expect(divergence(compileMachine(looserGuard), looserGuard).failed).toBe(false);
    expect(divergence(compileMachine(forgetfulUpdate), forgetfulUpdate).failed).toBe(false);
  });

  it('would be caught by the check if a guard differed on one side only', () => {
    expect(divergence(compileMachine(looserGuard), requestMachine).failed).toBe(true);
    expect(divergence(compileMachine(requestMachine), looserGuard).failed).toBe(true);
  });

  it('would be caught by the check if a context update differed on one side only', () => {
    expect(divergence(compileMachine(forgetfulUpdate), requestMachine).failed).toBe(true);
    expect(divergence(compileMachine(requestMachine), forgetfulUpdate).failed).toBe(true);
  });
});
