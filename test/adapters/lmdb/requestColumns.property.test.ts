import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeView } from '../../../src/adapters/lmdb/codec.js';
import { createRequestColumns } from '../../../src/adapters/lmdb/requestColumns.js';
import type { RequestEvent } from '../../../src/domain/request/events.js';
import { evolve, evolveInPlace, initialRequestState, type RequestState } from '../../../src/domain/request/state.js';

const reqIds = ['req_a', 'req_b', 'req_c'];
const at = fc.integer({ min: 0, max: 400 });

/** Random streams of events over a few requests, with times around their expiry so that guards refuse some. */
const event: fc.Arbitrary<RequestEvent> = fc.oneof(
  fc
    .record({
      reqId: fc.constantFrom(...reqIds),
      at,
      ttl: fc.integer({ min: 1, max: 300 }),
      account: fc.constantFrom('a', 'b'),
      extras: fc.boolean(),
      line: fc.constantFrom(undefined, 'batch_a', 'batch_b'),
    })
    .map(
      ({ reqId, at, ttl, account, extras, line }): RequestEvent => ({
        type: 'RequestQueued',
        reqId,
        accountId: account,
        keyId: `k${account}`,
        model: 'echo',
        promptChars: 3,
        at,
        expiresAt: at + ttl,
        ...(extras
          ? {
              input: 'messages' as const,
              idempotencyKey: `idem ${reqId}`,
              requestHash: 'h',
              metadata: `{"r":"${reqId}"}`,
              deadlineAt: at + Math.ceil(ttl / 2),
            }
          : {}),
        ...(line === undefined ? {} : { batchId: line, ...(extras ? { customId: `line ${reqId}` } : {}) }),
      }),
    ),
  fc
    .record({ reqId: fc.constantFrom(...reqIds), at, attempt: fc.integer({ min: 1, max: 3 }) })
    .map(({ reqId, at, attempt }): RequestEvent => ({ type: 'RequestProcessingStarted', reqId, attempt, at })),
  fc.record({ reqId: fc.constantFrom(...reqIds), at, reason: fc.constantFrom('x', 'timed out', 'é ✓') }).map(
    ({ reqId, at, reason }): RequestEvent => ({
      type: 'RequestAttemptFailed',
      reqId,
      attempt: 1,
      reason,
      retryAt: at + 5,
      at,
    }),
  ),
  fc.record({ reqId: fc.constantFrom(...reqIds), at, usage: fc.boolean(), tools: fc.boolean() }).map(
    ({ reqId, at, usage, tools }): RequestEvent => ({
      type: 'RequestCompleted',
      reqId,
      responseChars: 2,
      at,
      ...(usage ? { inputTokens: 3, outputTokens: at % 7 } : {}),
      ...(tools ? { finishReason: 'tool_calls', output: 'message' as const } : {}),
    }),
  ),
  fc
    .record({ reqId: fc.constantFrom(...reqIds), at })
    .map(({ reqId, at }): RequestEvent => ({ type: 'RequestFailed', reqId, reason: 'gave up', at })),
  fc
    .record({ reqId: fc.constantFrom(...reqIds), at })
    .map(({ reqId, at }): RequestEvent => ({ type: 'RequestExpired', reqId, at })),
  fc
    .record({ reqId: fc.constantFrom(...reqIds), at, deadline: fc.boolean() })
    .map(
      ({ reqId, at, deadline }): RequestEvent =>
        deadline
          ? { type: 'RequestCancelled', reqId, at, reason: 'deadline' }
          : { type: 'RequestCancelled', reqId, at },
    ),
);

describe('The columns a verification folds requests into', () => {
  it('give back, encoded, exactly the states the fold step makes, whatever order the events of requests interleave in', () => {
    fc.assert(
      fc.property(fc.array(event, { maxLength: 40 }), (events) => {
        // Reference: the fold step, one new state per event.
        const expected = new Map<string, RequestState>();
        for (const e of events) expected.set(e.reqId, evolve(expected.get(e.reqId) ?? initialRequestState, e));
        // Columns: one working state loaded per request, changed in place, written back.
        const columns = createRequestColumns();
        for (const e of events) {
          const slot = columns.slotOf(e.reqId);
          const working = slot === undefined ? columns.loadState(initialRequestState) : columns.load(slot);
          if (!evolveInPlace(working, e)) continue;
          if (slot === undefined) columns.append(e.reqId);
          else columns.save(slot);
        }
        for (const [reqId, state] of expected) {
          const slot = columns.slotOf(reqId);
          if (state.status === 'none') {
            expect(slot).toBeUndefined();
            continue;
          }
          expect(slot).toBeDefined();
          expect(encodeView(columns.read(slot as number))).toEqual(encodeView(state));
          expect(encodeView(columns.load(slot as number))).toEqual(encodeView(state));
        }
      }),
      { numRuns: 500 },
    );
  });
});
