import type { ReadModel } from '../../ports/Store.js';

/** How much one walk over the open batches may do. */
export type OpenBatchTurnsBounds = {
  /** Reads one walk makes at most (an account list, an account's batches, a batch's view: one each), give or take one
   * account's turn. */
  readonly readsPerWalk: number;
  /** An account's batches looked at in one turn, before the next account's turn. */
  readonly perTurn: number;
  /** Reads between two yields to the event loop (a read of LMDB or memory answers at once: a walk of them all would
   * hold the loop). */
  readonly readsPerYield: number;
};

/**
 * The defaults: 1,024 reads cost a few milliseconds on LMDB, about what the runner's old look at 1,000 views cost, and
 * look at 1,000 open batches in a tick or two; a turn of 4 keeps one account's share of a round small while costing a
 * seek per four batches; a yield every 64 reads keeps each slice of the event loop well under a millisecond or so
 * (docs/decisions.md, "Issue 40: open batches looked at fairly").
 */
export const defaultTurnsBounds: OpenBatchTurnsBounds = { readsPerWalk: 1_024, perTurn: 4, readsPerYield: 64 };

/** What a look at an open batch asks: go on to the next, or stop the walk and start the next one at this batch. */
export type Look = 'next' | 'stop';

type TurnReads = Pick<ReadModel, 'openBatchAccounts' | 'openBatchesOf'>;

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The open batches, accounts in turn (contract 16, issue 40): each walk goes on where the last one stopped, gives each
 * account a turn of at most `perTurn` of its batches (going on, at its next turn, after the last one it looked at),
 * then further turns to the accounts that have more, and ends once it has made `readsPerWalk` reads or looked at
 * every open batch. However many batches an account holds, another account's batch waits for at most one turn of
 * each account; and however many there are, each is looked at within a bounded number of walks. What it keeps between
 * walks is the account whose turn came last, a turn a `stop` cut short and, for each account with more batches than a
 * turn, the last batch looked at (forgotten once the account has none).
 */
export const openBatchTurns = (reads: TurnReads, bounds: OpenBatchTurnsBounds = defaultTurnsBounds) => {
  let lastAccount: string | undefined;
  const resumeAfter = new Map<string, string>();
  /** The turn a `stop` cut short: the next walk finishes it (what is left of it), not a whole new turn. */
  let cutTurn: { readonly account: string; readonly used: number } | undefined;

  /** Forgets where accounts the list passed over (they have no open batch any more) were: after `after` up to the
   * list's last account, wrapping round. */
  const forgetPassedOver = (after: string | undefined, accounts: readonly string[]) => {
    const last = accounts.at(-1);
    if (last === undefined) {
      resumeAfter.clear();
      return;
    }
    const listed = new Set(accounts);
    const start = after ?? '';
    const wrapped = after !== undefined && last <= after;
    for (const account of resumeAfter.keys()) {
      const passed = wrapped ? account > start || account <= last : account > start && account <= last;
      if (passed && !listed.has(account)) resumeAfter.delete(account);
    }
  };

  /** The accounts among `accounts` in turn after `after`, wrapping round to it. */
  const inTurnAfter = (accounts: readonly string[], after: string | undefined): string[] => {
    const sorted = [...accounts].sort();
    if (after === undefined) return sorted;
    return [...sorted.filter((account) => account > after), ...sorted.filter((account) => account <= after)];
  };

  return {
    /**
     * One walk: calls `look` with each batch in turn (its view is read there: a read of the walk). A look that answers
     * `stop` ends the walk, and the next walk starts with that batch. First every account with open batches has a
     * turn, from where the last walk stopped; then, while reads are left, the accounts that have more have further
     * turns (those whose batches were all looked at in this walk have nothing more to show).
     */
    walk: async (
      look: (batchId: string) => Promise<Look>,
    ): Promise<{ readonly reads: number; readonly looked: number }> => {
      let made = 0;
      let looked = 0;
      const spend = async (count: number) => {
        const before = made;
        made += count;
        if (Math.floor(made / bounds.readsPerYield) > Math.floor(before / bounds.readsPerYield)) await yieldToLoop();
      };
      const seen = new Set<string>();

      /** One turn of the account (what is left of it after a `stop`): `stop` when a look said so. */
      const turnOf = async (account: string): Promise<Look> => {
        const from = resumeAfter.get(account);
        const used = cutTurn?.account === account ? cutTurn.used : 0;
        cutTurn = undefined;
        const size = bounds.perTurn - used;
        const ids = await reads.openBatchesOf(account, from, size + 1);
        await spend(1);
        const turn = ids.slice(0, size);
        let previous = from;
        for (const [index, batchId] of turn.entries()) {
          if (!seen.has(batchId)) {
            seen.add(batchId);
            looked++;
            const answer = await look(batchId);
            await spend(1);
            if (answer === 'stop') {
              // The next walk starts with this account, at this batch, and gives it what is left of this turn.
              if (previous === undefined) resumeAfter.delete(account);
              else resumeAfter.set(account, previous);
              cutTurn = { account, used: used + index };
              return 'stop';
            }
          }
          previous = batchId;
        }
        // Its next turn goes on after this one's last batch, or from its first once it has no more.
        const last = turn.at(-1);
        if (ids.length > size && last !== undefined) resumeAfter.set(account, last);
        else resumeAfter.delete(account);
        lastAccount = account;
        return 'next';
      };
      const result = () => ({ reads: made, looked });

      // Every account a turn. Each costs three reads at least (its place in the list, its batches, a view): a list
      // longer than the reads left could not be walked.
      for (let listedAll = false; !listedAll && made < bounds.readsPerWalk; ) {
        const after = lastAccount;
        const asked = Math.max(1, Math.ceil((bounds.readsPerWalk - made) / 3));
        const accounts = await reads.openBatchAccounts(after, asked);
        await spend(Math.max(1, accounts.length));
        forgetPassedOver(after, accounts);
        listedAll = accounts.length < asked;
        for (const account of accounts) {
          if (made >= bounds.readsPerWalk) return result();
          if ((await turnOf(account)) === 'stop') return result();
        }
      }
      // Further turns of the accounts that have more, while reads are left.
      while (made < bounds.readsPerWalk && resumeAfter.size > 0) {
        for (const account of inTurnAfter([...resumeAfter.keys()], lastAccount)) {
          if (made >= bounds.readsPerWalk) return result();
          if ((await turnOf(account)) === 'stop') return result();
        }
      }
      return result();
    },
  };
};
