/**
 * Batches' lines handed to the committer and not durable yet, bounded in this process in all and per account (issue
 * 40): a batch queues its lines a write at a time, and each write's lines wait here for room before they are sent. So
 * the lines of every batch together never hold more than `maxLines` commands and `maxBytes` bytes of the committer's
 * queue (whose bounds the API's submits are refused at: Committer.ts), and one account's never more than its share of
 * them, whatever its batches: another account's batch still finds room, and its submits the committer's.
 */
export type LineBudgetLimits = {
  /** Lines in flight in this process, at most (`batches.maxLinesInFlight`). */
  readonly maxLines: number;
  /** Bytes of those lines (as the committer counts a command's text: `payloadBytesOf`), at most. */
  readonly maxBytes: number;
  /** The share of each bound one account's lines may hold (`batches.maxAccountShareInFlight`). */
  readonly accountShare: number;
};

export interface LineBudgetShape {
  /** How many lines, and bytes, one account may hand over at once (what a write of one batch's lines may hold). */
  readonly perAccount: { readonly lines: number; readonly bytes: number };
  /**
   * Waits until `lines` lines of `bytes` bytes of the account fit (one write's worth fits when nothing else of the
   * account is in flight, whatever its size), takes them, and resolves with the way to give them back (once their
   * write is durable, or failed).
   */
  take(accountId: string, lines: number, bytes: number): Promise<() => void>;
  /** Lines and bytes in flight now, in all. */
  held(): { readonly lines: number; readonly bytes: number };
}

type Held = { lines: number; bytes: number };
type Waiter = { readonly accountId: string; readonly lines: number; readonly bytes: number; readonly go: () => void };

export const createLineBudget = (limits: LineBudgetLimits): LineBudgetShape => {
  const perAccount = {
    lines: Math.max(1, Math.floor(limits.maxLines * limits.accountShare)),
    bytes: Math.max(1, Math.floor(limits.maxBytes * limits.accountShare)),
  };
  const total: Held = { lines: 0, bytes: 0 };
  const byAccount = new Map<string, Held>();
  let waiting: Waiter[] = [];

  /** Within both bounds; what nothing else holds always fits (a write at least, as the committer takes a command). */
  const fits = (accountId: string, lines: number, bytes: number) => {
    const account = byAccount.get(accountId);
    const accountFits =
      account === undefined || (account.lines + lines <= perAccount.lines && account.bytes + bytes <= perAccount.bytes);
    const totalFits =
      total.lines === 0 || (total.lines + lines <= limits.maxLines && total.bytes + bytes <= limits.maxBytes);
    return accountFits && totalFits;
  };

  const hold = (accountId: string, lines: number, bytes: number) => {
    const account = byAccount.get(accountId) ?? { lines: 0, bytes: 0 };
    account.lines += lines;
    account.bytes += bytes;
    byAccount.set(accountId, account);
    total.lines += lines;
    total.bytes += bytes;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      account.lines -= lines;
      account.bytes -= bytes;
      if (account.lines === 0) byAccount.delete(accountId);
      total.lines -= lines;
      total.bytes -= bytes;
      wakeWaiters();
    };
  };

  /** Lets in, in order, every waiter that fits now (one that does not fit does not hold back another account's). */
  const wakeWaiters = () => {
    if (waiting.length === 0) return;
    const still: Waiter[] = [];
    for (const waiter of waiting) {
      if (fits(waiter.accountId, waiter.lines, waiter.bytes)) waiter.go();
      else still.push(waiter);
    }
    waiting = still;
  };

  return {
    perAccount,
    take: (accountId, lines, bytes) =>
      new Promise((resolve) => {
        waiting.push({ accountId, lines, bytes, go: () => resolve(hold(accountId, lines, bytes)) });
        wakeWaiters();
      }),
    held: () => ({ lines: total.lines, bytes: total.bytes }),
  };
};
