import { createDispatcher } from '../../src/app/processing/dispatcher.js';
import { createSlots } from '../../src/app/processing/slots.js';
import { silentLogger } from '../../src/ports/Logger.js';
import type { StoreShape } from '../../src/ports/Store.js';
import type { ClaimedAttempt, WorkQueueShape } from '../../src/ports/WorkQueue.js';

/**
 * A dispatcher over stand-ins for the store's reads and the queue's claim (the parts a test decides), at a fixed
 * time, taking work, with `workers` workers.
 */
export const stubDispatcher = (options: {
  readonly reads: Partial<StoreShape['reads']>;
  readonly claim: WorkQueueShape['claim'];
  readonly workers: number;
  readonly run?: (claimed: ClaimedAttempt) => void;
}) =>
  createDispatcher({
    store: { reads: options.reads } as unknown as StoreShape,
    queue: { claim: options.claim } as unknown as WorkQueueShape,
    clock: { now: () => 1_000 },
    slots: createSlots(options.workers),
    log: silentLogger(),
    claim: {} as never,
    takesNoWork: () => false,
    run: options.run ?? (() => {}),
    giveBack: async () => {},
    gaveUp: () => {},
  });

/** Lets `n` turns of the event loop pass (a look runs from `setImmediate`). */
export const turns = async (n = 10) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};
