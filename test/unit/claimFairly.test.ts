import { describe, expect, it } from 'vitest';
import { type ClaimState, claimFairly, type DispatchReads, type QueuedEntry } from '../../src/domain/claimFairly.js';

/** Lanes in id order, each with `depth` requests of `echo` available at 0; `queuedAccounts` wraps round as the stores do.
 * Counts the lanes and the entries the claim reads. */
const queueOf = (lanes: readonly string[], depth: number) => {
  const entries = new Map<string, QueuedEntry[]>(
    lanes.map((lane) => [
      lane,
      Array.from({ length: depth }, (_, i) => ({ reqId: `${lane}-${i}`, availableAt: 0, model: 'echo' })),
    ]),
  );
  let lanesRead = 0;
  let entriesRead = 0;
  const reads: DispatchReads = {
    *queuedAccounts(after) {
      const sorted = [...lanes].sort();
      const from = after === undefined ? 0 : sorted.filter((lane) => lane <= after).length;
      for (let i = 0; i < sorted.length; i++) {
        lanesRead++;
        yield sorted[(from + i) % sorted.length] as string;
      }
    },
    *queuedOf(lane) {
      for (const entry of entries.get(lane) ?? []) {
        entriesRead++;
        yield entry;
      }
    },
  };
  return { reads, lanesRead: () => lanesRead, entriesRead: () => entriesRead };
};

const idle = (lastAccount: string | undefined): ClaimState => ({
  lastAccount,
  running: new Set(),
  runningOf: () => 0,
});

/** No worker of this process busy but those each account holds (`workers`; none where it is absent). */
const holding = (workers: Readonly<Record<string, number>>): ClaimState => ({
  ...idle(undefined),
  runningOfAccount: (accountId) => workers[accountId] ?? 0,
});

describe('claiming work from the queue fairly', () => {
  it('takes one request of each account in turn, starting after the account served last, round after round', () => {
    const { reads } = queueOf(['acct_a', 'acct_b', 'acct_c'], 5);
    const fromQueue = claimFairly(reads, idle('acct_a'), { free: 7, modelLimit: () => 100 }, 0);
    expect(fromQueue.claimed.map((claimed) => claimed.reqId)).toEqual([
      'acct_b-0',
      'acct_c-0',
      'acct_a-0',
      'acct_b-1',
      'acct_c-1',
      'acct_a-1',
      'acct_b-2',
    ]);
    expect(fromQueue.lastAccount).toBe('acct_b');
    expect(fromQueue.exhausted).toBe(false);
  });

  it('reads the lanes with work from the store once per claim, however many rounds it takes', () => {
    const { reads, lanesRead } = queueOf(['acct_a', 'acct_b'], 40);
    const fromQueue = claimFairly(reads, idle(undefined), { free: 64, modelLimit: () => 100 }, 0);
    expect(fromQueue.claimed).toHaveLength(64);
    expect(fromQueue.claimed.slice(0, 4).map((claimed) => claimed.reqId)).toEqual([
      'acct_a-0',
      'acct_b-0',
      'acct_a-1',
      'acct_b-1',
    ]);
    expect(lanesRead()).toBe(2);
  });

  it('gives what the share held back in turn too, starting after the account served last', () => {
    // acct_b and acct_c each hold one echo worker already (their share): the first pass passes them over.
    const { reads } = queueOf(['acct_a', 'acct_b', 'acct_c'], 3);
    const state = holding({ acct_b: 1, acct_c: 1 });
    const limits = { free: 3, modelLimit: () => 100, accountShare: () => 1 };
    const fromQueue = claimFairly(reads, state, limits, 0);
    expect(fromQueue.claimed.map((claimed) => claimed.reqId)).toEqual(['acct_a-0', 'acct_b-0', 'acct_c-0']);
  });

  it('reads an account alone no deeper than it takes, though the account holds more than its share', () => {
    // acct_a holds 40 echo workers (its share is 8) and is the only account with work: the share holds nothing back.
    const { reads, entriesRead } = queueOf(['acct_a'], 1_000);
    const state = holding({ acct_a: 40 });
    const limits = { free: 4, modelLimit: () => 100, accountShare: () => 8 };
    const fromQueue = claimFairly(reads, state, limits, 0);
    expect(fromQueue.claimed.map((claimed) => claimed.reqId)).toEqual(['acct_a-0', 'acct_a-1', 'acct_a-2', 'acct_a-3']);
    expect(entriesRead()).toBe(4);
  });

  it('still holds an account over its share back while another account has work waiting', () => {
    const { reads } = queueOf(['acct_a', 'acct_b'], 5);
    const state = holding({ acct_a: 40 });
    const limits = { free: 3, modelLimit: () => 100, accountShare: () => 8 };
    const fromQueue = claimFairly(reads, state, limits, 0);
    expect(fromQueue.claimed.map((claimed) => claimed.reqId)).toEqual(['acct_b-0', 'acct_b-1', 'acct_b-2']);
  });

  it('takes an account that has no more work out of the turns without losing the order of the others', () => {
    const { reads } = queueOf(['acct_a', 'acct_b', 'acct_c'], 1);
    const fromQueue = claimFairly(reads, idle('acct_b'), { free: 5, modelLimit: () => 100 }, 0);
    expect(fromQueue.claimed.map((claimed) => claimed.reqId)).toEqual(['acct_c-0', 'acct_a-0', 'acct_b-0']);
    expect(fromQueue.exhausted).toBe(true);
  });
});
