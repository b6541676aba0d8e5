import { describe, expect, it } from 'vitest';
import { maxReasonChars } from '../../src/domain/batch/decider.js';
import { maxWorkFailures } from '../../src/domain/batch/machine.js';
import {
  type BatchState,
  mayCancelBatch,
  mayCancelFinalizing,
  noCounts,
  publicBatchStatus,
} from '../../src/domain/batch/state.js';
import { Refused } from '../../src/domain/errors.js';
import { batchWebhookEvents } from '../../src/domain/webhook/dueDeliveries.js';
import { at, batchAccount, created, lease, started, step } from '../support/batchDecider.js';

/** The batch's failures of its housekeeping (BatchWorkFailed) and the operator's cancel of a finalizing batch. */

const fail = (
  state: BatchState,
  reason = 'RangeError: Maximum call stack size exceeded',
  owner = 'p1',
  now = at + 10,
) => step(state, { type: 'RecordWorkFailure', owner, reason, now });

/** `times` failures of the step the batch is in, one after the other. */
const failTimes = (state: BatchState, times: number, reason?: string) => {
  let now = state;
  for (let i = 0; i < times; i++) now = fail(now, reason).state;
  return now;
};

const errorsOf = (state: BatchState) => JSON.parse(state.context.errors ?? '[]') as Record<string, unknown>[];

const validating = () => step(created(), { type: 'TakeBatch', owner: 'p1', leaseMs: lease, now: at + 1 }).state;

/** In progress, all 3 lines queued, 1 completed and 1 waiting cancelled (the counts a finalize is decided on). */
const linesEnded = { ...noCounts, queued: 3, completed: 1, failed: 2 };

describe("a batch whose housekeeping fails (BatchWorkFailed, counted in the machine's context)", () => {
  it('stays where it is, counted, until its step has failed maxWorkFailures times, then fails if it was validating', () => {
    expect(maxWorkFailures).toBe(3);
    const once = fail(validating());
    expect(once.events).toEqual([
      {
        type: 'BatchWorkFailed',
        batchId: expect.any(String),
        owner: 'p1',
        step: 'validating',
        reason: 'RangeError: Maximum call stack size exceeded',
        at: at + 10,
      },
    ]);
    const twice = fail(once.state).state;
    expect(twice).toMatchObject({ status: 'validating', context: { failedStep: 'validating', stepFailures: 2 } });
    expect(twice.context.errors).toBeUndefined();
    const thrice = fail(twice);
    expect(thrice.state.status).toBe('failed');
    expect(thrice.state.context.failedAt).toBe(at + 10);
    expect(errorsOf(thrice.state)).toEqual([
      {
        code: 'batch_failed',
        line: null,
        message:
          'validating its input file failed 3 times; the last time: RangeError: Maximum call stack size exceeded',
        param: null,
      },
    ]);
    // Final: nothing more is taken.
    expect(fail(thrice.state).refused).toBeInstanceOf(Refused);
    expect(batchWebhookEvents(thrice.events[0] as never, thrice.state).map((event) => event.type)).toEqual([
      'batch.failed',
    ]);
    expect(batchWebhookEvents(fail(validating()).events[0] as never, fail(validating()).state)).toEqual([]);
  });

  it('is counted only from the process that holds its lease, while it holds it', () => {
    const state = validating();
    expect(fail(state, 'x', 'p2').refused).toBeInstanceOf(Refused);
    expect(fail(state, 'x', 'p1', at + 1 + lease).refused).toBeInstanceOf(Refused);
    expect(fail(created()).refused).toBeInstanceOf(Refused);
  });

  it('gives each step its own tries: failures while validating do not count once it is in progress', () => {
    let state = failTimes(validating(), 2);
    state = step(state, { type: 'StartBatch', owner: 'p1', total: 3, now: at + 20 }).state;
    state = failTimes(state, 2);
    expect(state).toMatchObject({ status: 'in_progress', context: { failedStep: 'in_progress', stepFailures: 2 } });
    expect(fail(state).state.status).toBe('failing');
  });

  it('in progress, past its window or cancelling, goes failing with its errors, then finalizes and ends failed with its files', () => {
    for (const before of [
      started(),
      step(started(), { type: 'CancelBatch', accountId: batchAccount, now: at + 5 }).state,
      step(started(), { type: 'CloseWindow', now: at + 86_400_000 }).state,
    ]) {
      const owned = step(before, { type: 'TakeBatch', owner: 'p1', leaseMs: lease, now: at + 6 }).state;
      let state = failTimes(owned, 3, 'Error: line 2 of batch x no longer validates');
      expect(state.status).toBe('failing');
      expect(publicBatchStatus(state.status)).toBe('in_progress');
      expect(state.context.ending).toBe('failed');
      expect(errorsOf(state)).toEqual([expect.objectContaining({ code: 'batch_failed' })]);
      expect(state.context.failedAt).toBeUndefined();
      // The account's cancel is not taken any more; its lines are stopped, then its files written.
      expect(mayCancelBatch(state, at + 11)).toBe(false);
      const finalize = { type: 'FinalizeBatch', owner: 'p1', now: at + 11 } as const;
      expect(step(state, finalize, { ...linesEnded, failed: 1 }).refused).toBeInstanceOf(Refused);
      state = step(state, finalize, linesEnded).state;
      expect(state.status).toBe('finalizing');
      const ended = step(state, { type: 'EndBatch', owner: 'p1', completed: 1, failed: 2, now: at + 12 });
      expect(ended.state.status).toBe('failed');
      expect(ended.state.context).toMatchObject({ failedAt: at + 12, endedAt: at + 12, completed: 1, failed: 2 });
      expect(batchWebhookEvents(ended.events[0] as never, ended.state).map((event) => event.type)).toEqual([
        'batch.failed',
      ]);
    }
  });

  it('failing or finalizing, ends failed at once without files after its own tries, its errors naming each step', () => {
    const failing = failTimes(started(), 3, 'first');
    const fromFailing = failTimes(failing, 3, 'second');
    expect(fromFailing.status).toBe('failed');
    expect(fromFailing.context.outputFileId).toBeUndefined();
    expect(errorsOf(fromFailing).map((error) => error.message)).toEqual([
      'queueing its lines failed 3 times; the last time: first',
      'stopping its lines failed 3 times; the last time: second',
    ]);
    const finalizing = step(started(), { type: 'FinalizeBatch', owner: 'p1', now: at + 5 }, linesEnded).state;
    const stuck = failTimes(finalizing, 2, 'RangeError: Invalid string length');
    expect(stuck.status).toBe('finalizing');
    const failed = fail(stuck, 'RangeError: Invalid string length').state;
    expect(failed).toMatchObject({ status: 'failed', context: { failedAt: at + 10 } });
    expect(errorsOf(failed).map((error) => error.message)).toEqual([
      'writing its output files failed 3 times; the last time: RangeError: Invalid string length',
    ]);
  });

  it('keeps a reason short and printable: no control characters, no unpaired surrogate', () => {
    const reason = `a\u001b[31mb\nc\ud800d${'x'.repeat(1_000)}`;
    const [event] = fail(validating(), reason).events;
    expect(event).toMatchObject({ reason: `a [31mb c\ufffdd${'x'.repeat(maxReasonChars - 11)}` });
  });
});

describe("the operator's cancel of a finalizing batch (BatchFinalizingCancelled)", () => {
  const finalizing = () => step(started(), { type: 'FinalizeBatch', owner: 'p1', now: at + 5 }, linesEnded).state;

  it('ends it cancelled at once, without files, whoever holds its lease; the finalize in flight is refused its end', () => {
    const state = finalizing();
    expect(mayCancelBatch(state, at + 6)).toBe(false);
    expect(mayCancelFinalizing(state, at + 6)).toBe(true);
    const cancelled = step(state, { type: 'CancelFinalizing', now: at + 6 });
    expect(cancelled.events).toEqual([{ type: 'BatchFinalizingCancelled', batchId: expect.any(String), at: at + 6 }]);
    expect(cancelled.state).toMatchObject({
      status: 'cancelled',
      context: { ending: 'cancelled', endedAt: at + 6, cancellingAt: at + 6 },
    });
    expect(cancelled.state.context.outputFileId).toBeUndefined();
    const end = { type: 'EndBatch', owner: 'p1', completed: 1, failed: 2, now: at + 7 } as const;
    expect(step(cancelled.state, end).refused).toBeInstanceOf(Refused);
    expect(batchWebhookEvents(cancelled.events[0] as never, cancelled.state).map((event) => event.type)).toEqual([
      'batch.cancelled',
    ]);
  });

  it('is taken only while it is finalizing: before, the account cancels it; after, it has ended', () => {
    expect(step(started(), { type: 'CancelFinalizing', now: at + 6 }).refused).toBeInstanceOf(Refused);
    expect(step(validating(), { type: 'CancelFinalizing', now: at + 6 }).refused).toBeInstanceOf(Refused);
    const ended = step(finalizing(), { type: 'EndBatch', owner: 'p1', completed: 1, failed: 2, now: at + 6 }).state;
    expect(ended.status).toBe('completed');
    expect(step(ended, { type: 'CancelFinalizing', now: at + 7 }).refused).toBeInstanceOf(Refused);
    expect(mayCancelBatch(started(), at + 6)).toBe(true);
  });
});
