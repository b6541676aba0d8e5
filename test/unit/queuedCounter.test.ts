import { describe, expect, it } from 'vitest';
import { queuedDelta, queueFullMessage } from '../../src/domain/queuedCounter.js';
import type { RequestState } from '../../src/domain/request/state.js';

const request = (status: RequestState['status'], batchId?: string): RequestState =>
  ({
    status,
    context: { reqId: 'req_1', accountId: 'acct_1', ...(batchId === undefined ? {} : { batchId }) },
  }) as RequestState;

describe("An account's count of queued requests (what maxQueued bounds)", () => {
  it('counts an interactive request while it waits or is processed, and a batch line never', () => {
    expect(queuedDelta(request('none'), request('waiting'))).toBe(1);
    expect(queuedDelta(request('waiting'), request('processing'))).toBe(0);
    expect(queuedDelta(request('processing'), request('completed'))).toBe(-1);
    expect(queuedDelta(request('waiting'), request('cancelled'))).toBe(-1);
    expect(queuedDelta(request('none', 'batch_1'), request('waiting', 'batch_1'))).toBe(0);
    expect(queuedDelta(request('processing', 'batch_1'), request('failed', 'batch_1'))).toBe(0);
  });

  it("says the account's count and its plan's bound, their digits grouped", () => {
    expect(queueFullMessage(1_900, 100, 'the free plan')).toBe(
      'the queue is full: this account already has 1,900 requests waiting or being processed (the free plan allows 100); wait for some to finish (or cancel some) and retry',
    );
    expect(queueFullMessage(100_000, 100_000)).toContain('already has 100,000 requests');
    expect(queueFullMessage(100_000, 100_000)).toContain('(its plan allows 100,000)');
  });
});
