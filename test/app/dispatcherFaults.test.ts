import { describe, expect, it } from 'vitest';
import { StoreUnreachable } from '../../src/ports/Store.js';
import { stubDispatcher, turns } from '../support/stubDispatcher.js';

describe('the dispatcher when its database goes away between a claim and the read after it', () => {
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
      moveToProcessing: async () => ({ started: [{ reqId: 'req_1', attempt: 1, leaseUntil: 10_000 }], gaveUp: [] }),
      workers: 1,
      run: (claimed) => ran.push(claimed.reqId),
    });
    dispatcher.schedule();
    // A few turns of the event loop: the claim, the failed read, the failed look for what is due next.
    await turns(20);
    expect(ran).toEqual(['req_1']);
    expect(dueAsked).toBeGreaterThanOrEqual(1);
    dispatcher.stop();
  });
});
