import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { StoreUnreachable } from '../../src/ports/Store.js';
import { stubDispatcher, turns } from '../support/stubDispatcher.js';

/** How long the dispatcher waits before it looks again after a read failed (dispatcher.ts's `faultRetryMs`). */
const faultRetryMs = 1_000;

describe('the dispatcher when its database goes away between a claim and the read after it', () => {
  const rejections: unknown[] = [];
  const heard = (reason: unknown) => rejections.push(reason);
  beforeEach(() => {
    rejections.length = 0;
    process.on('unhandledRejection', heard);
    // Simulated timers; a look still runs from a real `setImmediate`, which `turns` lets pass.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });
  afterEach(() => {
    vi.useRealTimers();
    process.off('unhandledRejection', heard);
  });

  it('runs what it claimed, keeps going, and looks again later, without an unhandled rejection that would end the process', async () => {
    const unreachable = () => Promise.reject(new StoreUnreachable('the PostgreSQL database cannot be reached: x'));
    let dueAsked = 0;
    const ran: string[] = [];
    const dispatcher = stubDispatcher({
      reads: {
        // Due once; the read that orders accounts after the claim fails, as does every read after it.
        dueWork: async () => {
          dueAsked++;
          if (dueAsked === 1) return { now: true };
          return unreachable();
        },
        request: unreachable,
      },
      claim: async () => ({ started: [{ reqId: 'req_1', attempt: 1, leaseUntil: 10_000 }], gaveUp: [] }),
      // A worker left free after the claim: nothing but the dispatcher's own timer can wake it for the next read.
      workers: 2,
      run: (claimed) => ran.push(claimed.reqId),
    });
    dispatcher.schedule();
    // A few turns of the event loop: the claim, the failed read of its account, the failed look for what is due next.
    await turns(20);
    expect(ran).toEqual(['req_1']);
    expect(dueAsked).toBe(2);
    // Nothing else wakes it: it looks again once the fault's wait has passed, not before, and keeps doing so.
    await vi.advanceTimersByTimeAsync(faultRetryMs - 1);
    await turns(20);
    expect(dueAsked).toBe(2);
    await vi.advanceTimersByTimeAsync(1);
    await turns(20);
    expect(dueAsked).toBe(3);
    await vi.advanceTimersByTimeAsync(faultRetryMs);
    await turns(20);
    expect(dueAsked).toBe(4);
    expect(ran).toEqual(['req_1']);
    expect(rejections).toEqual([]);
    await dispatcher.stop();
  });
});
