/** How long a loop of background work may hold the event loop before it hands it back (a few milliseconds). */
export const turnBudgetMs = 5;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The pace of a long loop that runs beside the server's calls (a batch's 50,000 lines validated, queued, cancelled or
 * written): `await pace()` once per item hands the event loop back (`setImmediate`, after the I/O waiting) once
 * `budgetMs` have passed since it last did, so that no call waits on the loop for more than a few milliseconds. An
 * `await` of a promise already resolved does not: it is a microtask, run before any I/O. Otherwise it costs one read of
 * the clock per item.
 */
export const eventLoopPace = (budgetMs = turnBudgetMs, now: () => number = () => performance.now()) => {
  let since = now();
  return async (): Promise<void> => {
    if (now() - since < budgetMs) return;
    await nextTurn();
    since = now();
  };
};
