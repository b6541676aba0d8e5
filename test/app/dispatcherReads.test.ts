import { describe, expect, it } from 'vitest';
import { createDispatcher } from '../../src/app/processing/dispatcher.js';
import { createSlots } from '../../src/app/processing/slots.js';
import { silentLogger } from '../../src/ports/Logger.js';
import type { DueWork, StoreShape } from '../../src/ports/Store.js';
import type { WorkQueueShape } from '../../src/ports/WorkQueue.js';

const turns = async (n = 10) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

/** A dispatcher over a queue whose answer the test sets, counting its reads and claims. */
const dispatcherOver = (due: { current: DueWork }) => {
  const counts = { reads: 0, claims: 0 };
  const store = {
    reads: {
      dueWork: async () => {
        counts.reads++;
        return due.current;
      },
      request: async () => undefined,
    },
  } as unknown as StoreShape;
  // Work due but left for its model's bound: the claim takes nothing.
  const queue = {
    moveToProcessing: async () => {
      counts.claims++;
      return { started: [], gaveUp: [] };
    },
  } as unknown as WorkQueueShape;
  const dispatcher = createDispatcher({
    store,
    queue,
    clock: { now: () => 1_000 },
    slots: createSlots(2),
    log: silentLogger(),
    claim: {} as never,
    takesNoWork: () => false,
    run: () => {},
    giveBack: async () => {},
    gaveUp: () => {},
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
