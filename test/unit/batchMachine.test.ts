import { describe, expect, it } from 'vitest';
import { lineRequestId } from '../../src/domain/batch/lines.js';
import { type BatchCounts, noCounts, publicBatchStatus } from '../../src/domain/batch/state.js';
import { Refused } from '../../src/domain/errors.js';
import { couldBeId } from '../../src/domain/identifiers.js';
import { at, batchId, created, lease, started, step } from '../support/batchDecider.js';

describe('the batch machine', () => {
  it('goes validating, in_progress, finalizing, completed when every line ended', () => {
    let state = started();
    expect(state.status).toBe('in_progress');
    expect(state.context.total).toBe(3);
    const done: BatchCounts = { ...noCounts, queued: 3, completed: 2, failed: 1 };
    state = step(state, { type: 'FinalizeBatch', owner: 'p1', now: at + 3 }, done).state;
    expect(state.status).toBe('finalizing');
    state = step(state, { type: 'EndBatch', owner: 'p1', completed: 2, failed: 1, now: at + 4 }).state;
    expect(state.status).toBe('completed');
    expect(state.context).toMatchObject({ ending: 'completed', completed: 2, failed: 1 });
  });

  it('refuses to finalize while a line has not ended', () => {
    const result = step(
      started(),
      { type: 'FinalizeBatch', owner: 'p1', now: at + 3 },
      { ...noCounts, queued: 3, completed: 2 },
    );
    expect(result.refused).toBeInstanceOf(Refused);
    expect(result.state.status).toBe('in_progress');
  });

  it('takes a step of the housekeeping only from the process that holds the lease, until it lapses', () => {
    const state = step(created(), { type: 'TakeBatch', owner: 'p1', leaseMs: lease, now: at + 1 }).state;
    expect(step(state, { type: 'TakeBatch', owner: 'p2', leaseMs: lease, now: at + 2 }).refused).toBeDefined();
    expect(step(state, { type: 'StartBatch', owner: 'p2', total: 1, now: at + 2 }).refused).toBeDefined();
    const takenOver = step(state, { type: 'TakeBatch', owner: 'p2', leaseMs: lease, now: at + 1 + lease });
    expect(takenOver.refused).toBeUndefined();
    expect(
      step(takenOver.state, { type: 'StartBatch', owner: 'p1', total: 1, now: at + 2 + lease }).refused,
    ).toBeDefined();
  });

  it('its holder gone, the lease ends at once and another process takes the housekeeping up', () => {
    const state = started('p1');
    const gone = step(state, { type: 'OwnerGone', owner: 'p1', now: at + 5 });
    expect(gone.refused).toBeUndefined();
    expect(gone.state.context.leaseUntil).toBe(at + 5);
    expect(step(gone.state, { type: 'TakeBatch', owner: 'p2', leaseMs: lease, now: at + 6 }).refused).toBeUndefined();
    // The old holder steps no more; a second notice, or one naming another process, changes nothing.
    expect(step(gone.state, { type: 'FinalizeBatch', owner: 'p1', now: at + 6 }).refused).toBeDefined();
    expect(step(gone.state, { type: 'OwnerGone', owner: 'p1', now: at + 6 }).refused).toBeDefined();
    expect(step(state, { type: 'OwnerGone', owner: 'p2', now: at + 5 }).refused).toBeDefined();
  });

  it('fails at validation with its errors, and nothing more happens to it', () => {
    let state = step(created(), { type: 'TakeBatch', owner: 'p1', leaseMs: lease, now: at + 1 }).state;
    state = step(state, { type: 'FailValidation', owner: 'p1', errors: '[]', now: at + 2 }).state;
    expect(state.status).toBe('failed');
    expect(step(state, { type: 'CancelBatch', accountId: 'acct_aaaaaaaaaaaaaaaa', now: at + 3 }).refused).toBeDefined();
  });

  it('is cancelled once the lines that were queued have ended, however many were never queued', () => {
    let state = step(started('p1', 10), { type: 'CancelBatch', accountId: 'acct_aaaaaaaaaaaaaaaa', now: at + 3 }).state;
    expect(state.status).toBe('cancelling');
    expect(
      step(state, { type: 'FinalizeBatch', owner: 'p1', now: at + 4 }, { ...noCounts, queued: 4, completed: 3 })
        .refused,
    ).toBeDefined();
    state = step(
      state,
      { type: 'FinalizeBatch', owner: 'p1', now: at + 4 },
      { ...noCounts, queued: 4, completed: 3, failed: 1 },
    ).state;
    state = step(state, { type: 'EndBatch', owner: 'p1', completed: 3, failed: 7, now: at + 5 }).state;
    expect(state.status).toBe('cancelled');
  });

  it('refuses a cancel from another account as if the batch were unknown', () => {
    expect(
      step(started(), { type: 'CancelBatch', accountId: 'acct_bbbbbbbbbbbbbbbb', now: at + 3 }).refused?.message,
    ).toMatch(/no batch/);
  });

  it('closes its window only at or after its expiry, shows in_progress until it ends expired', () => {
    const state = started();
    expect(step(state, { type: 'CloseWindow', now: state.context.expiresAt - 1 }).refused).toBeDefined();
    let closed = step(state, { type: 'CloseWindow', now: state.context.expiresAt }).state;
    expect(closed.status).toBe('expiring');
    expect(publicBatchStatus(closed.status)).toBe('in_progress');
    closed = step(closed, { type: 'TakeBatch', owner: 'p1', leaseMs: lease, now: state.context.expiresAt }).state;
    closed = step(
      closed,
      { type: 'FinalizeBatch', owner: 'p1', now: state.context.expiresAt + 1 },
      { ...noCounts, queued: 3, completed: 1, failed: 2 },
    ).state;
    closed = step(closed, {
      type: 'EndBatch',
      owner: 'p1',
      completed: 1,
      failed: 2,
      now: state.context.expiresAt + 2,
    }).state;
    expect(closed.status).toBe('expired');
  });
});

describe("a batch line's request id", () => {
  it('is of the request id form, the same every time, different for every line, and sorts by line', () => {
    const ids = Array.from({ length: 5_000 }, (_, i) => lineRequestId(batchId, i + 1));
    for (const id of ids) expect(couldBeId('request', id)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    expect(lineRequestId(batchId, 42)).toBe(ids[41]);
    expect(lineRequestId(batchId, 2 ** 35)).not.toBe(lineRequestId(batchId, 2 ** 35 + 1));
  });
});
