import { describe, expect, it } from 'vitest';
import { decideBatch } from '../../src/domain/batch/decider.js';
import {
  type BatchCounts,
  type BatchState,
  evolveBatch,
  initialBatchState,
  mayTakeBatch,
  noCounts,
} from '../../src/domain/batch/state.js';
import { Refused } from '../../src/domain/errors.js';

const batchId = 'batch_0190f2a0b1c2AbCdEfGhIjKlMnOpQrStUv';
const accountId = 'acct_aaaaaaaaaaaaaaaa';
const at = 1_000_000;
const leaseMs = 30_000;
/** When the lease that p1 takes at `at + 1` lapses. */
const lapse = at + 1 + leaseMs;

const step = (state: BatchState, command: Parameters<typeof decideBatch>[3], counts: BatchCounts = noCounts) => {
  const events = decideBatch(batchId, state, counts, command);
  if (events instanceof Refused) throw events;
  return events.reduce<BatchState>((s, e) => evolveBatch(s, e), state);
};

const validating = step(initialBatchState, {
  type: 'CreateBatch',
  accountId,
  keyId: 'key_aaaaaaaaaaaaaaaa',
  endpoint: '/v1/chat/completions',
  inputFileId: 'file-0190f2a0b1c2AbCdEfGhIjKlMnOpQrStUv',
  completionWindow: '24h',
  windowMs: 86_400_000,
  now: at,
});
const held = step(validating, { type: 'TakeBatch', owner: 'p1', leaseMs, now: at + 1 });
const inProgress = step(held, { type: 'StartBatch', owner: 'p1', total: 2, model: 'echo', now: at + 2 });
const cancelling = step(inProgress, { type: 'CancelBatch', accountId, now: at + 3 });
const expiring = step(inProgress, { type: 'CloseWindow', now: at + 86_400_000 });
const allEnded: BatchCounts = { ...noCounts, queued: 2, completed: 2 };
const finalizing = step(inProgress, { type: 'FinalizeBatch', owner: 'p1', now: at + 4 }, allEnded);
const completed = step(finalizing, { type: 'EndBatch', owner: 'p1', completed: 2, failed: 0, now: at + 5 });

describe("Whether a process may take a batch's lease (the batch machine's `free` guard)", () => {
  it('is yes for any process while nobody holds the batch', () => {
    expect(validating.context.owner).toBeUndefined();
    expect(mayTakeBatch(validating, 'p1', at)).toBe(true);
    expect(mayTakeBatch(validating, 'p2', at)).toBe(true);
  });

  it('is no for another process while the holder’s lease runs, and yes from the millisecond it lapses', () => {
    for (const state of [held, inProgress, cancelling, finalizing]) {
      expect(mayTakeBatch(state, 'p2', at + 2)).toBe(false);
      expect(mayTakeBatch(state, 'p2', lapse - 1)).toBe(false);
      expect(mayTakeBatch(state, 'p2', lapse)).toBe(true);
    }
  });

  it('is yes for the holder itself, while its lease runs (a renewal) and after it lapsed', () => {
    for (const state of [held, inProgress, cancelling, finalizing]) {
      expect(mayTakeBatch(state, 'p1', at + 2)).toBe(true);
      expect(mayTakeBatch(state, 'p1', lapse + 1)).toBe(true);
    }
  });

  it('is yes for another process at once when the holder’s process is known to be gone', () => {
    const gone = step(inProgress, { type: 'OwnerGone', owner: 'p1', now: at + 10 });
    expect(mayTakeBatch(gone, 'p2', at + 10)).toBe(true);
    expect(mayTakeBatch(gone, 'p2', at + 9)).toBe(false);
  });

  it('is no for every process once the batch has ended, and before it exists', () => {
    const rejected = step(held, { type: 'FailValidation', owner: 'p1', errors: '[]', now: at + 2 });
    for (const state of [completed, rejected, initialBatchState]) {
      expect(mayTakeBatch(state, 'p1', lapse + 1)).toBe(false);
      expect(mayTakeBatch(state, 'p2', lapse + 1)).toBe(false);
    }
  });

  it('agrees with the machine on taking the lease in every open state: where it says yes the take is accepted, where no refused', () => {
    for (const state of [validating, held, inProgress, cancelling, expiring, finalizing])
      for (const [owner, now] of [
        ['p1', at + 2],
        ['p2', at + 2],
        ['p2', lapse],
      ] as const) {
        const taken = decideBatch(batchId, state, noCounts, { type: 'TakeBatch', owner, leaseMs, now });
        expect(taken instanceof Refused).toBe(!mayTakeBatch(state, owner, now));
      }
  });
});
