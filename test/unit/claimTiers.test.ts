import { describe, expect, it } from 'vitest';
import { type ClaimState, claimFairly, type DispatchReads, type QueuedEntry } from '../../src/domain/claimFairly.js';
import { dispatchLaneOf } from '../../src/domain/dispatchLane.js';

type Waiting = { readonly reqId: string; readonly accountId: string; readonly availableAt?: number } & (
  | { readonly serviceTier?: 'priority' | 'flex' }
  | { readonly batchId: string }
);

/** The dispatch index of these waiting requests (all of `echo`), lanes as the stores key them. */
const queueOf = (waiting: readonly Waiting[]): DispatchReads => {
  const lanes = new Map<string, QueuedEntry[]>();
  for (const request of waiting) {
    const lane = dispatchLaneOf(request);
    const entries = lanes.get(lane) ?? [];
    entries.push({ reqId: request.reqId, availableAt: request.availableAt ?? 0, model: 'echo' });
    lanes.set(lane, entries);
  }
  for (const entries of lanes.values()) entries.sort((a, b) => a.availableAt - b.availableAt);
  return {
    *queuedAccounts(after) {
      const sorted = [...lanes.keys()].sort();
      const from = after === undefined ? 0 : sorted.filter((lane) => lane <= after).length;
      for (let i = 0; i < sorted.length; i++) yield sorted[(from + i) % sorted.length] as string;
    },
    queuedOf: (lane) => lanes.get(lane) ?? [],
  };
};

const idle: ClaimState = { lastAccount: undefined, running: new Set(), runningOf: () => 0 };
const claimedIds = (reads: DispatchReads, free: number, extra: object = {}, now = 1_000) =>
  claimFairly(reads, idle, { free, modelLimit: () => 100, ...extra }, now).claimed.map((c) => c.reqId);

describe('claiming work by service tier', () => {
  it('starts due priority work before default, and default before flex, whatever the accounts and their order', () => {
    const reads = queueOf([
      { reqId: 'a-flex', accountId: 'acct_a', serviceTier: 'flex' },
      { reqId: 'a-default', accountId: 'acct_a' },
      { reqId: 'b-default', accountId: 'acct_b' },
      { reqId: 'c-priority', accountId: 'acct_c', serviceTier: 'priority' },
      { reqId: 'a-priority', accountId: 'acct_a', serviceTier: 'priority' },
    ]);
    expect(claimedIds(reads, 5)).toEqual(['a-priority', 'c-priority', 'a-default', 'b-default', 'a-flex']);
    expect(claimedIds(reads, 1)).toEqual(['a-priority']);
    expect(claimedIds(reads, 3)).toEqual(['a-priority', 'c-priority', 'a-default']);
  });

  it('gives flex work a worker only when no priority or default work of its model is left to start', () => {
    const reads = queueOf([
      { reqId: 'a-flex', accountId: 'acct_a', serviceTier: 'flex', availableAt: 0 },
      { reqId: 'b-default', accountId: 'acct_b', availableAt: 900 },
    ]);
    expect(claimedIds(reads, 1)).toEqual(['b-default']);
    // A model at its bound takes nothing more, flex included.
    expect(
      claimFairly(reads, { ...idle, runningOf: () => 1 }, { free: 2, modelLimit: () => 2 }, 1_000).claimed,
    ).toEqual([expect.objectContaining({ reqId: 'b-default' })]);
  });

  it('starts a default request that has waited promoteAfterMs as priority would be, so default never starves', () => {
    const reads = queueOf([
      { reqId: 'old-default', accountId: 'acct_a', availableAt: 0 },
      { reqId: 'new-default', accountId: 'acct_a', availableAt: 950 },
      { reqId: 'b-priority', accountId: 'acct_b', serviceTier: 'priority', availableAt: 990 },
    ]);
    // Promoted after 500 ms: the old default goes in turn with priority work, ahead of the newer default.
    expect(claimedIds(reads, 2, { promoteAfterMs: 500 })).toEqual(['old-default', 'b-priority']);
    // Without promotion priority comes first.
    expect(claimedIds(reads, 2)).toEqual(['b-priority', 'old-default']);
    expect(claimedIds(reads, 2, { promoteAfterMs: 5_000 })).toEqual(['b-priority', 'old-default']);
  });

  it("takes batches' lines as default work up to their share, and beyond it only after flex-free default work", () => {
    const reads = queueOf([
      { reqId: 'line-1', accountId: 'acct_a', batchId: 'batch_1' },
      { reqId: 'line-2', accountId: 'acct_a', batchId: 'batch_1' },
      { reqId: 'line-3', accountId: 'acct_a', batchId: 'batch_1' },
      { reqId: 'b-default', accountId: 'acct_b' },
      { reqId: 'b-flex', accountId: 'acct_b', serviceTier: 'flex' },
      { reqId: 'c-priority', accountId: 'acct_c', serviceTier: 'priority' },
    ]);
    // One worker of the model is the batches' share: one line goes with default work, the rest with flex.
    expect(claimedIds(reads, 6, { batchShare: () => 1 })).toEqual([
      'c-priority',
      'line-1',
      'b-default',
      // Flex work and lines beyond the share: lanes in turn after the one served last (acct_b's default lane).
      'b-flex',
      'line-2',
      'line-3',
    ]);
    expect(claimedIds(reads, 3, { batchShare: () => 1 })).toEqual(['c-priority', 'line-1', 'b-default']);
    expect(claimedIds(reads, 4, { batchShare: () => 0 })).toEqual(['c-priority', 'b-default', 'b-flex', 'line-1']);
  });

  it('keeps each account within its share of the model in every tier, and lets an account alone use every worker', () => {
    const reads = queueOf([
      { reqId: 'a-p1', accountId: 'acct_a', serviceTier: 'priority' },
      { reqId: 'a-p2', accountId: 'acct_a', serviceTier: 'priority' },
      { reqId: 'a-p3', accountId: 'acct_a', serviceTier: 'priority' },
      { reqId: 'b-d1', accountId: 'acct_b' },
    ]);
    // A share of 2: acct_a's third priority request waits for acct_b's default one, which no other work wants.
    expect(claimedIds(reads, 3, { accountShare: () => 2 })).toEqual(['a-p1', 'a-p2', 'b-d1']);
    expect(claimedIds(reads, 4, { accountShare: () => 2 })).toEqual(['a-p1', 'a-p2', 'b-d1', 'a-p3']);
  });
});
