import { describe, expect, it } from 'vitest';
import { createDispatcher } from '../../src/app/processing/dispatcher.js';
import { createSlots } from '../../src/app/processing/slots.js';
import { silentLogger } from '../../src/ports/Logger.js';
import { type StoreShape, StoreUnreachable } from '../../src/ports/Store.js';
import type { WorkQueueShape } from '../../src/ports/WorkQueue.js';

describe('the dispatcher when its database goes away between a claim and the read after it', () => {
  it('runs what it claimed, keeps going, and looks again later, without an unhandled rejection that would end the process', async () => {
    const unreachable = () => Promise.reject(new StoreUnreachable('the PostgreSQL database cannot be reached: x'));
    let dueAsked = 0;
    const store = {
      reads: {
        // Due once; the read that orders accounts after the claim fails, as does every read after it.
        dueWork: async () => {
          dueAsked++;
          if (dueAsked === 1) return { now: true };
          return unreachable();
        },
        request: unreachable,
      },
    } as unknown as StoreShape;
    const queue = {
      moveToProcessing: async () => ({ started: [{ reqId: 'req_1', attempt: 1, leaseUntil: 10_000 }], gaveUp: [] }),
    } as unknown as WorkQueueShape;
    const ran: string[] = [];
    const dispatcher = createDispatcher({
      store,
      queue,
      clock: { now: () => 1_000 },
      slots: createSlots(1),
      log: silentLogger(),
      claim: {} as never,
      takesNoWork: () => false,
      run: (claimed) => ran.push(claimed.reqId),
      giveBack: async () => {},
      gaveUp: () => {},
    });
    dispatcher.schedule();
    // A few turns of the event loop: the claim, the failed read, the failed look for what is due next.
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(ran).toEqual(['req_1']);
    expect(dueAsked).toBeGreaterThanOrEqual(1);
    dispatcher.stop();
  });
});
