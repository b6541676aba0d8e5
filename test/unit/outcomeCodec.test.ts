import { deserialize, serialize } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { decodeError, decodeOutcome, encodeError, encodeOutcome } from '../../src/adapters/ipc/outcomeCodec.js';
import { isRefusal } from '../../src/domain/commands.js';
import * as errors from '../../src/domain/errors.js';
import { type CommandOutcome, StorageFault, StoreUnreachable } from '../../src/ports/Store.js';

/** What the cluster's IPC channel does to a message (advanced serialization: the structured clone of v8). */
const acrossIpc = <T>(value: T): T => deserialize(serialize(value)) as T;

const roundTrip = (outcome: CommandOutcome | Error) => decodeOutcome(acrossIpc(encodeOutcome(outcome)));
const errorBack = (error: Error) => roundTrip(error) as Error;

/** One instance of every error class of the domain, with every field set. */
const everyError: readonly Error[] = [
  new errors.InvalidRequest({ message: 'bad', details: { field: 'prompt', nested: [1, 2] } }),
  new errors.PayloadTooLarge({ message: 'too large' }),
  new errors.Unauthorized({ message: 'no key' }),
  new errors.Forbidden({ message: 'suspended' }),
  new errors.NotFound({ message: 'gone' }),
  new errors.MethodNotAllowed({ message: 'no', allow: ['GET', 'POST'] }),
  new errors.RateLimited({ message: 'slow down', retryAfterSeconds: 3, budget: 'submits' }),
  new errors.QuotaExceeded({
    message: 'budget used',
    budget: 'tokensPerDay',
    limit: 20,
    used: 30,
    resetsAt: 86_400_000,
    retryAfterSeconds: 3_600,
  }),
  new errors.ProcessingFailed({ message: 'failed' }),
  new errors.Unavailable({ message: 'busy', retryAfterSeconds: 1 }),
  new errors.IdempotencyKeyReused({ message: 'reused' }),
  new errors.Refused({ message: 'refused' }),
  new errors.QueueFull({ message: 'full', maxQueued: 100, count: 120 }),
  new errors.AccountLimitReached({ message: 'at the bound', budget: 'file_storage', limit: 10, count: 10 }),
  new errors.LifecycleViolation({ reqId: 'req_1', from: 'completed', event: 'Cancel', message: 'cannot' }),
  new errors.DeliveryLifecycleViolation({
    deliveryId: 'wh_1',
    from: 'delivered',
    event: 'WebhookAttemptStarted',
    message: 'cannot',
  }),
];

describe('the outcome codec of the shared writer (IPC)', () => {
  it('covers every error class that domain/errors.ts exports', () => {
    const classes = Object.values(errors).filter((value) => typeof value === 'function');
    expect(everyError.map((error) => error.constructor).sort((a, b) => a.name.localeCompare(b.name))).toEqual(
      classes.sort((a, b) => a.name.localeCompare(b.name)),
    );
  });

  it.each(everyError.map((error) => [(error as { _tag?: string })._tag, error] as const))(
    '%s comes back as an instance of its class, with its fields',
    (_tag, error) => {
      const back = errorBack(error);
      expect(back).toBeInstanceOf(error.constructor);
      expect(back).toBeInstanceOf(Error);
      expect({ ...back }).toEqual({ ...error });
      expect(back.message).toBe(error.message);
      expect((back as { _tag?: string })._tag).toBe((error as { _tag?: string })._tag);
      expect(isRefusal(back)).toBe(isRefusal(error));
    },
  );

  it('a structured clone alone would lose the classes (why the codec exists)', () => {
    const cloned = acrossIpc(new errors.QueueFull({ message: 'full', maxQueued: 1, count: 1 }));
    expect(cloned).not.toBeInstanceOf(errors.QueueFull);
  });

  it('an outcome with events comes back as the same data', () => {
    const outcome: CommandOutcome = {
      events: [{ type: 'RequestCancelled', reqId: 'req_1', at: 5, seq: 7 } as never],
      replayOf: 'req_0',
    };
    expect(roundTrip(outcome)).toEqual(outcome);
  });

  it('a command that threw stays an error without a tag (the committer rejects its caller)', () => {
    const back = errorBack(new TypeError('broken'));
    expect(back).toBeInstanceOf(Error);
    expect('_tag' in back).toBe(false);
    expect(back.message).toBe('broken');
    expect(back.name).toBe('TypeError');
  });

  it('a storage fault and an unreachable store keep their classes (an API caller is told 503)', () => {
    const fault = decodeError(acrossIpc(encodeError(new StorageFault('disk full'))));
    expect(fault).toBeInstanceOf(StorageFault);
    expect(fault).not.toBeInstanceOf(StoreUnreachable);
    expect(fault.message).toBe('disk full');
    const unreachable = decodeError(acrossIpc(encodeError(new StoreUnreachable('down'))));
    expect(unreachable).toBeInstanceOf(StoreUnreachable);
  });
});
