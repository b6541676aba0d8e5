import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defaultTurnsBounds, type OpenBatchTurnsBounds, openBatchTurns } from '../../src/app/batches/openBatchTurns.js';
import type { Command } from '../../src/domain/commands.js';
import type { ReadModel, StoreShape } from '../../src/ports/Store.js';
import { batchIdOf, createBatch, createFile, fileIdOf } from '../contract/fixtures.js';
import { openStoreOf } from '../support/testStore.js';

/**
 * Issue 40 (finding 5): which open batches each tick of a server's batch runner looks at. The runner read the 1,000
 * oldest, so that with 1,005 open batches a new one was never looked at. The walk takes the accounts in turn, a
 * bounded number of reads a tick, and goes on where the last stopped: a new account's batch is looked at in the first
 * walk however many another account holds, and every open batch within a bounded number of walks.
 */

/** A memory store holding, for each account i, `counts[i]` open batches (their ids by account, in id order). */
const storeWith = async (counts: readonly number[]): Promise<{ store: StoreShape; batchesOf: string[][] }> => {
  const store = openStoreOf('memory');
  const commands: Command[] = [];
  const batchesOf: string[][] = [];
  let n = 0;
  counts.forEach((count, i) => {
    const account = i + 1;
    commands.push(createFile(fileIdOf(account), { account }));
    batchesOf.push([]);
    for (let j = 0; j < count; j++) {
      const batchId = batchIdOf(++n);
      batchesOf[i]?.push(batchId);
      commands.push(createBatch(batchId, fileIdOf(account), { account }));
    }
  });
  for (let i = 0; i < commands.length; i += 1_000) await store.commit({ commands: commands.slice(i, i + 1_000) });
  // Each account's in id order, as the index holds them.
  return { store, batchesOf: batchesOf.map((ids) => ids.sort()) };
};

/** The store's index reads the walk makes, counted (a look at a batch reads its view: counted by the caller). */
const counted = (reads: ReadModel) => {
  let calls = 0;
  return {
    reads: {
      // A list of accounts costs a seek per account (one at least).
      openBatchAccounts: async (after: string | undefined, limit: number) => {
        const accounts = await reads.openBatchAccounts(after, limit);
        calls += Math.max(1, accounts.length);
        return accounts;
      },
      openBatchesOf: (account: string, after: string | undefined, limit: number) => {
        calls++;
        return reads.openBatchesOf(account, after, limit);
      },
    },
    calls: () => calls,
  };
};

describe('Open batches looked at accounts in turn (the batch runner’s walk)', () => {
  it("looks at a new account's batch in the first walk, though another account holds 1,005 open batches", async () => {
    const { store, batchesOf } = await storeWith([1_005, 1]);
    const walk = openBatchTurns(store.reads);
    const looked: string[] = [];
    const { reads } = await walk.walk(async (batchId) => {
      looked.push(batchId);
      return 'next';
    });
    console.log(`first walk over 1,006 open batches: ${reads} reads, ${looked.length} batches looked at`);
    expect(looked).toContain(batchesOf[1]?.[0]);
    expect(reads).toBeLessThanOrEqual(defaultTurnsBounds.readsPerWalk + defaultTurnsBounds.perTurn + 1);
    // The big account's batches are looked at a turn at a time, each once.
    expect(new Set(looked).size).toBe(looked.length);
  });

  it('looks at every open batch within a bounded number of walks, each of a bounded number of reads, however the batches are spread over accounts', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 30 }), { minLength: 1, maxLength: 12 }),
        fc.record({ readsPerWalk: fc.integer({ min: 4, max: 40 }), perTurn: fc.integer({ min: 1, max: 5 }) }),
        fc.integer({ min: 0, max: 5 }),
        async (counts, sizes, walksBefore) => {
          const bounds: OpenBatchTurnsBounds = { ...sizes, readsPerYield: 8 };
          const { store, batchesOf } = await storeWith(counts);
          const all = batchesOf.flat();
          const { reads, calls } = counted(store.reads);
          const walk = openBatchTurns(reads, bounds);
          // From wherever earlier walks left it.
          for (let i = 0; i < walksBefore; i++) await walk.walk(async () => 'next');
          const unseen = new Set(all);
          // What the fair order needs: a round gives each account a turn (a read of its batches, a view per batch of
          // the turn); the account with the most needs a round per turn, and one more where the earlier walks left it
          // part-way. Every walk but the last makes its reads in full, at most half of them lists of accounts (each
          // listed account has its turn in the same walk, or the list is cut to the reads left).
          const roundReads = counts.reduce((sum, count) => sum + 1 + Math.min(count, bounds.perTurn), 0);
          const rounds = Math.ceil(Math.max(...counts) / bounds.perTurn) + 1;
          const walksAllowed = Math.ceil((2 * rounds * roundReads) / bounds.readsPerWalk) + 2;
          let walks = 0;
          while (unseen.size > 0 && walks < walksAllowed) {
            walks++;
            const before = calls();
            let looks = 0;
            await walk.walk(async (batchId) => {
              looks++;
              unseen.delete(batchId);
              return 'next';
            });
            expect(calls() - before + looks).toBeLessThanOrEqual(bounds.readsPerWalk + bounds.perTurn + 1);
          }
          expect([...unseen]).toEqual([]);
          await store.close();
        },
      ),
      { numRuns: 60 },
    );
  }, 60_000);

  it('gives a batch of each other account a look before the second turn of any account', async () => {
    const { store, batchesOf } = await storeWith([40, 3, 40, 1, 1]);
    const walk = openBatchTurns(store.reads, { readsPerWalk: 1_000, perTurn: 4, readsPerYield: 32 });
    const looked: string[] = [];
    await walk.walk(async (batchId) => {
      looked.push(batchId);
      return 'next';
    });
    const accountOf = (batchId: string) => batchesOf.findIndex((ids) => ids.includes(batchId));
    // The first round: four of each account's (fewer where it has fewer), in account order.
    expect(looked.slice(0, 13).map(accountOf)).toEqual([0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 3, 4]);
    // Every batch once, in one walk when its reads allow.
    expect(new Set(looked).size).toBe(85);
    expect(looked).toHaveLength(85);
  });

  it('starts the next walk at the batch a look stopped at, with what was left of its account’s turn', async () => {
    const { store, batchesOf } = await storeWith([10, 10]);
    const [first = [], second = []] = batchesOf;
    const walk = openBatchTurns(store.reads, { readsPerWalk: 1_000, perTurn: 4, readsPerYield: 32 });
    const looked: string[] = [];
    // No place for the first account's third batch.
    await walk.walk(async (batchId) => {
      if (batchId === first[2]) return 'stop';
      looked.push(batchId);
      return 'next';
    });
    expect(looked).toEqual([first[0], first[1]]);
    const next: string[] = [];
    await walk.walk(async (batchId) => {
      next.push(batchId);
      return next.length >= 6 ? 'stop' : 'next';
    });
    // The rest of its turn (two batches), then the other account's turn.
    expect(next).toEqual([first[2], first[3], second[0], second[1], second[2], second[3]]);
  });
});
