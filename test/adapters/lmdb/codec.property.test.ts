import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeMap, decodeRecord, encodeRecord, encodeView, viewMatches } from '../../../src/adapters/lmdb/codec.js';
import type { RequestContext } from '../../../src/domain/request/machine.js';
import type { RequestState, RequestStatus } from '../../../src/domain/request/state.js';

const statuses: RequestStatus[] = ['waiting', 'processing', 'completed', 'failed', 'cancelled', 'expired'];
/** Numbers as the views hold them: small counts, epoch milliseconds, and the odd large value. */
const number = fc.oneof(
  fc.integer({ min: 0, max: 300 }),
  fc.integer({ min: 1_700_000_000_000, max: 2_000_000_000_000 }),
  fc.integer({ min: 0, max: 2 ** 40 }),
);
const text = fc.string({ unit: 'grapheme', maxLength: 300 });

const state: fc.Arbitrary<RequestState> = fc
  .record(
    {
      status: fc.constantFrom(...statuses),
      reqId: fc.string({ minLength: 1, maxLength: 60 }),
      accountId: fc.string({ minLength: 1, maxLength: 40 }),
      keyId: fc.string({ minLength: 1, maxLength: 40 }),
      model: text,
      promptChars: number,
      createdAt: number,
      expiresAt: number,
      attempts: number,
      availableAt: number,
      lastError: text,
      responseChars: number,
      completedAt: number,
      failedAt: number,
      failureReason: text,
      expiredAt: number,
      startedAt: number,
      cancelledAt: number,
      input: fc.constantFrom('messages' as const, 'chat' as const),
      idempotencyKey: text,
      requestHash: text,
      inputTokens: number,
      outputTokens: number,
      finishReason: text,
      output: fc.constant('message' as const),
      owner: text,
      leaseUntil: number,
      maxAttempts: number,
      metadata: text,
      // A batch's line: its batch and custom_id (each may come without the other).
      batchId: fc.string({ minLength: 1, maxLength: 40 }),
      customId: text,
    },
    {
      requiredKeys: [
        'status',
        'reqId',
        'accountId',
        'keyId',
        'model',
        'promptChars',
        'createdAt',
        'expiresAt',
        'attempts',
        'availableAt',
      ],
    },
  )
  .map(({ status, ...context }) => ({ status, context: context as RequestContext }));

describe('A request record', () => {
  it('reads back exactly the view and the text it was written with, whatever the strings and numbers', () => {
    fc.assert(
      fc.property(state, text, (written, body) => {
        const record = encodeRecord(written, body);
        const read = decodeRecord(record);
        expect(read.state).toEqual(written);
        const keepsText = ['waiting', 'processing', 'completed'].includes(written.status);
        expect(read.text).toBe(keepsText ? body : undefined);
        expect(viewMatches(written, record)).toBe(true);
      }),
      { numRuns: 1_000 },
    );
  });

  it('does not match the view of another state', () => {
    fc.assert(
      fc.property(state, state, (one, other) => {
        fc.pre(JSON.stringify(one) !== JSON.stringify(other));
        expect(viewMatches(other, encodeRecord(one, 'x'))).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it('holds a batch’s fields only in a line’s view: any other view has the fields it had before batches', () => {
    const context = {
      reqId: 'req_a',
      accountId: 'acc_1',
      keyId: 'key_1',
      model: 'echo',
      promptChars: 5,
      createdAt: 1,
      expiresAt: 2,
      attempts: 0,
      availableAt: 1,
      metadata: '{"k":"v"}',
    };
    const fieldsOf = (state: RequestState) => decodeMap<unknown[]>(encodeView(state)).length;
    // The 18 fields every view has, then the 12 newer ones up to metadata, the last before batches.
    expect(fieldsOf({ status: 'waiting', context })).toBe(18 + 12);
    const line: RequestState = { status: 'waiting', context: { ...context, batchId: 'batch_1', customId: 'c-1' } };
    expect(fieldsOf(line)).toBe(18 + 14);
    expect(decodeRecord(encodeRecord(line, 'hello')).state).toEqual(line);
  });
});
