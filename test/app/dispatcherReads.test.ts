import { describe, expect, it } from 'vitest';
import type { DueWork } from '../../src/ports/Store.js';
import { stubDispatcher, turns } from '../support/stubDispatcher.js';

/** A dispatcher over a queue whose answer the test sets, counting its reads and claims. */
const dispatcherOver = (due: { current: DueWork }) => {
  const counts = { reads: 0, claims: 0 };
  const dispatcher = stubDispatcher({
    reads: {
      dueWork: async () => {
        counts.reads++;
        return due.current;
      },
      request: async () => undefined,
    },
    // Work due but left for its model's bound: the claim takes nothing.
    claim: async () => {
      counts.claims++;
      return { started: [], gaveUp: [] };
    },
    workers: 2,
  });
  return { dispatcher, counts };
};

describe('the dispatcher reading the queue', () => {
  it('reads nothing when a worker is let go and nothing else happened since a read found nothing due', async () => {
    const due = { current: { now: false } as DueWork };
    const { dispatcher, counts } = dispatcherOver(due);
    dispatcher.schedule();
    await turns();
    expect(counts.reads).toBe(1);
    for (let i = 0; i < 5; i++) {
      dispatcher.workerFree();
      await turns(2);
    }
    expect(counts.reads).toBe(1);
    // Anything else (a request queued, a change by another process, a timer) has it read again.
    due.current = { now: true };
    dispatcher.schedule();
    await turns();
    expect(counts.reads).toBeGreaterThanOrEqual(2);
    expect(counts.claims).toBe(1);
    await dispatcher.stop();
  });

  it('keeps reading when workers are let go while the last read found work due (left for its model’s bound)', async () => {
    const due = { current: { now: true } as DueWork };
    const { dispatcher, counts } = dispatcherOver(due);
    dispatcher.schedule();
    await turns();
    const claims = counts.claims;
    expect(claims).toBe(1);
    dispatcher.workerFree();
    await turns();
    expect(counts.claims).toBe(claims + 1);
    await dispatcher.stop();
  });
});
