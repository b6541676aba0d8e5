/** A request waiting for a worker, as the dispatch index holds it. */
export type QueuedEntry = { readonly reqId: string; readonly availableAt: number; readonly model: string };

/** What a pick reads: the dispatch index, accounts in id order, each account's waiting requests by availability. */
export type DispatchReads = {
  /** Accounts with requests waiting for a worker, in id order, starting after `after` and wrapping round to it. */
  queuedAccounts(after: string | undefined): Iterable<string>;
  /** An account's requests waiting for a worker, earliest availability first. */
  queuedOf(accountId: string): Iterable<QueuedEntry>;
};

export type DispatchState = {
  /** The account served last; the next pick starts after it (round robin). */
  readonly lastAccount: string | undefined;
  /** Requests already being worked on (picked or claimed, their start not durable yet). */
  readonly running: ReadonlySet<string>;
  /** Requests in flight per model, against each model's own concurrency limit. */
  readonly runningOf: (model: string) => number;
};

export type DispatchLimits = {
  readonly free: number;
  readonly modelLimit: (model: string) => number;
};

export type Picked = { readonly reqId: string; readonly accountId: string; readonly model: string };

export type Pick = {
  readonly picked: Picked[];
  readonly lastAccount: string | undefined;
  /** The earliest future time a skipped request becomes available (to wake up then), if any. */
  readonly nextAvailableAt: number | undefined;
  /** Nothing was left waiting: every queued request the pick saw is picked now or already being worked on. */
  readonly exhausted: boolean;
};

/** How far into one account's queue a pick looks for a request it may take (past ones being worked on). */
const scanLimit = 256;

/**
 * Picks up to `free` requests to start, taking accounts in turn: one request from each account with work, in
 * account order starting after the account served last, round after round. So an account with 10,000 queued
 * requests gets one worker turn per round, like an account with one. Within an account, requests go in the order
 * they became available; requests of a model at its concurrency limit are passed over for that account's next.
 */
export const pickFairly = (reads: DispatchReads, state: DispatchState, limits: DispatchLimits, now: number): Pick => {
  const picked: Picked[] = [];
  const taken = new Set<string>();
  /** Requests of each model picked by this pick, on top of those running before it. */
  const perModel = new Map<string, number>();
  const runningNow = (model: string) => state.runningOf(model) + (perModel.get(model) ?? 0);
  let lastAccount = state.lastAccount;
  let nextAvailableAt: number | undefined;
  let leftBehind = false;

  const eligible = (entry: QueuedEntry) =>
    !state.running.has(entry.reqId) &&
    !taken.has(entry.reqId) &&
    runningNow(entry.model) < limits.modelLimit(entry.model);

  // One cursor per account for the whole pick: later rounds continue where the last one stopped.
  const cursors = new Map<string, { entries: Iterator<QueuedEntry>; scanned: number; done: boolean }>();
  const firstEligible = (accountId: string): QueuedEntry | undefined => {
    let cursor = cursors.get(accountId);
    if (cursor === undefined) {
      cursor = { entries: reads.queuedOf(accountId)[Symbol.iterator](), scanned: 0, done: false };
      cursors.set(accountId, cursor);
    }
    while (!cursor.done) {
      const next = cursor.entries.next();
      if (next.done || ++cursor.scanned > scanLimit) {
        if (!next.done) leftBehind = true;
        cursor.done = true;
        return undefined;
      }
      const entry = next.value;
      if (!eligible(entry)) {
        // Passed over for its model's limit (not because it is being worked on): it still waits.
        if (!state.running.has(entry.reqId) && !taken.has(entry.reqId)) leftBehind = true;
        continue;
      }
      if (entry.availableAt > now) {
        leftBehind = true;
        // Later entries of this account become available later still.
        nextAvailableAt = Math.min(nextAvailableAt ?? entry.availableAt, entry.availableAt);
        cursor.done = true;
        return undefined;
      }
      return entry;
    }
    return undefined;
  };

  let full = false;
  while (picked.length < limits.free) {
    const before = picked.length;
    for (const accountId of reads.queuedAccounts(lastAccount)) {
      const entry = firstEligible(accountId);
      if (entry === undefined) continue;
      picked.push({ reqId: entry.reqId, accountId, model: entry.model });
      taken.add(entry.reqId);
      perModel.set(entry.model, (perModel.get(entry.model) ?? 0) + 1);
      lastAccount = accountId;
      if (picked.length >= limits.free) {
        full = true;
        break;
      }
    }
    if (picked.length === before) break;
  }
  // Close the database cursors left open part-way.
  for (const cursor of cursors.values()) cursor.entries.return?.();
  return { picked, lastAccount, nextAvailableAt, exhausted: !full && !leftBehind };
};
