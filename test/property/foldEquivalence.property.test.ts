import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RequestEvent } from '../../src/domain/request/events.js';
import { evolve, evolveWithMachine, initialRequestState, type RequestState } from '../../src/domain/request/state.js';

const reqId = 'req_x';
const time = fc.integer({ min: 0, max: 200 });
const event: fc.Arbitrary<RequestEvent> = fc.oneof(
  fc.record({ at: time, ttl: fc.integer({ min: 1, max: 150 }) }).map(
    ({ at, ttl }): RequestEvent => ({
      type: 'RequestQueued',
      reqId,
      accountId: 'a',
      keyId: 'k',
      model: 'm',
      promptChars: 3,
      at,
      expiresAt: at + ttl,
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
  time.map((at): RequestEvent => ({ type: 'RequestFailed', reqId, reason: 'y', at })),
  time.map((at): RequestEvent => ({ type: 'RequestExpired', reqId, at })),
);

describe('The fast fold step', () => {
  it('gives exactly the state XState’s own transition gives, for any sequence of events, accepted or not', () => {
    fc.assert(
      fc.property(fc.array(event, { maxLength: 30 }), (events) => {
        let fast: RequestState = initialRequestState;
        let machine: RequestState = initialRequestState;
        for (const e of events) {
          fast = evolve(fast, e);
          machine = evolveWithMachine(machine, e);
          expect(JSON.parse(JSON.stringify(fast))).toEqual(JSON.parse(JSON.stringify(machine)));
        }
      }),
      { numRuns: 500 },
    );
  });
});
