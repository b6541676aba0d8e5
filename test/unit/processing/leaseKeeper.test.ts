import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLeaseKeeper } from '../../../src/app/processing/leaseKeeper.js';
import type { ClockShape } from '../../../src/ports/Clock.js';
import type { Held, WorkQueueShape } from '../../../src/ports/WorkQueue.js';

const leaseMs = 30_000;
/** A third of the lease: how often leases are extended, and how much left counts as lapsing. */
const thirdMs = 10_000;
const owner = 'owner_a';
/** Simulated time: the fake timers' `Date`, which moves only as the test advances the timers. */
const clock: ClockShape = { now: () => Date.now() };

/** A keeper over a queue whose extensions answer `extension` (a promise per call), recording what it was asked. */
const keeperOver = (extension: () => Promise<boolean>) => {
  const extended: { readonly held: Held; readonly leaseMs: number; readonly now: number }[] = [];
  const refused: string[] = [];
  const lapsing: string[] = [];
  const queue = {
    extendLease: (held: Held, ms: number, now: number) => {
      extended.push({ held, leaseMs: ms, now });
      return extension();
    },
  } as unknown as WorkQueueShape;
  const keeper = createLeaseKeeper({
    queue,
    clock,
    owner,
    leaseMs,
    refused: (reqId) => refused.push(reqId),
    lapsing: (reqId) => lapsing.push(reqId),
  });
  return { keeper, extended, refused, lapsing };
};

describe('The lease keeper', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: Date.UTC(2026, 0, 1), toFake: ['setInterval', 'clearInterval', 'Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('extends every attempt it holds once each third of a lease, in its owner’s name, for a whole lease from then', async () => {
    const { keeper, extended } = keeperOver(async () => true);
    const start = clock.now();
    keeper.hold('req_a', 1, start + leaseMs);
    keeper.hold('req_b', 2, start + leaseMs);
    await vi.advanceTimersByTimeAsync(thirdMs - 1);
    expect(extended).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(extended).toEqual([
      { held: { reqId: 'req_a', attempt: 1, owner }, leaseMs, now: start + thirdMs },
      { held: { reqId: 'req_b', attempt: 2, owner }, leaseMs, now: start + thirdMs },
    ]);
    await vi.advanceTimersByTimeAsync(thirdMs);
    expect(extended).toHaveLength(4);
    keeper.stop();
  });

  it('never gives up a lease while its extensions are written, however long the attempt runs', async () => {
    const { keeper, lapsing } = keeperOver(async () => true);
    keeper.hold('req_a', 1, clock.now() + leaseMs);
    await vi.advanceTimersByTimeAsync(10 * leaseMs);
    expect(lapsing).toEqual([]);
    expect(keeper.giveUpIfLapsing('req_a')).toBe(false);
    expect(keeper.gaveUp('req_a')).toBe(false);
    keeper.stop();
  });

  it('gives a lease up once, and extends it no more, when no extension was written and a third of it or less is left', async () => {
    // The store's writes fail (a full disk, a database gone): no extension is ever durable.
    const { keeper, extended, lapsing } = keeperOver(() => Promise.reject(new Error('write failed')));
    keeper.hold('req_a', 1, clock.now() + leaseMs);
    await vi.advanceTimersByTimeAsync(thirdMs);
    // Two thirds left: an extension is tried, and fails.
    expect(extended).toHaveLength(1);
    expect(lapsing).toEqual([]);
    await vi.advanceTimersByTimeAsync(thirdMs);
    // A third left: given up before the lease ends, so no worker that takes it over finds this one still calling.
    expect(lapsing).toEqual(['req_a']);
    expect(keeper.gaveUp('req_a')).toBe(true);
    expect(keeper.giveUpIfLapsing('req_a')).toBe(true);
    await vi.advanceTimersByTimeAsync(3 * thirdMs);
    expect(lapsing).toEqual(['req_a']);
    expect(extended).toHaveLength(1);
    keeper.stop();
  });

  it('says at once, between renewals, that a lease with a third or less left is lapsing, and gives it up then', () => {
    const { keeper, lapsing } = keeperOver(async () => true);
    keeper.hold('req_short', 1, clock.now() + thirdMs);
    keeper.hold('req_long', 1, clock.now() + thirdMs + 1);
    expect(keeper.giveUpIfLapsing('req_long')).toBe(false);
    expect(keeper.giveUpIfLapsing('req_short')).toBe(true);
    expect(lapsing).toEqual(['req_short']);
    // An attempt it does not hold is not its to give up.
    expect(keeper.giveUpIfLapsing('req_unknown')).toBe(false);
    keeper.stop();
  });

  it('tells of an extension the store refuses: the attempt is no longer this process’s to finish', async () => {
    const { keeper, refused, lapsing } = keeperOver(async () => false);
    keeper.hold('req_a', 1, clock.now() + leaseMs);
    await vi.advanceTimersByTimeAsync(thirdMs);
    expect(refused).toEqual(['req_a']);
    expect(lapsing).toEqual([]);
    keeper.stop();
  });

  it('never gives up a lease whose end it does not know, even while its extensions fail', async () => {
    const { keeper, extended, lapsing } = keeperOver(() => Promise.reject(new Error('write failed')));
    keeper.hold('req_a', 1, undefined);
    await vi.advanceTimersByTimeAsync(10 * leaseMs);
    expect(extended).toHaveLength(10 * 3);
    expect(lapsing).toEqual([]);
    expect(keeper.giveUpIfLapsing('req_a')).toBe(false);
    keeper.stop();
  });

  it('lets go of an attempt once it is over, but keeps a later attempt of the same request that it holds by then', async () => {
    const { keeper, extended } = keeperOver(async () => true);
    keeper.hold('req_a', 1, clock.now() + leaseMs);
    keeper.hold('req_a', 2, clock.now() + leaseMs);
    keeper.drop('req_a', 1);
    await vi.advanceTimersByTimeAsync(thirdMs);
    expect(extended.map((e) => e.held)).toEqual([{ reqId: 'req_a', attempt: 2, owner }]);
    keeper.drop('req_a', 2);
    await vi.advanceTimersByTimeAsync(thirdMs);
    expect(extended).toHaveLength(1);
    keeper.stop();
  });

  it('extends nothing more once stopped', async () => {
    const { keeper, extended } = keeperOver(async () => true);
    keeper.hold('req_a', 1, clock.now() + leaseMs);
    keeper.stop();
    await vi.advanceTimersByTimeAsync(3 * thirdMs);
    expect(extended).toEqual([]);
  });
});
