/**
 * This process's workers: `concurrency` of them, each held from the moment work is reserved for it (a claim being
 * written, a submit that may start at once) until its model call has ended. What the pool holds in memory is bounded
 * by them: the queue itself lives in the store.
 */
export const createSlots = (concurrency: number) => {
  let held = 0;
  return {
    /** Workers free now. */
    free: () => concurrency - held,
    /** Holds `count` workers if that many are free; returns whether it did. */
    hold(count = 1): boolean {
      if (count < 0 || held + count > concurrency) return false;
      held += count;
      return true;
    },
    /** Lets `count` workers go. */
    letGo(count = 1): void {
      held = Math.max(0, held - count);
    },
    held: () => held,
  };
};

export type Slots = ReturnType<typeof createSlots>;
