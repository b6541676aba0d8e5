import { rmSync } from 'node:fs';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { type LmdbStore, openLmdbStore } from '../../../src/adapters/lmdb/LmdbStore.js';
import { decideGcra } from '../../../src/domain/rateLimit/gcra.js';
import { tempDataDir } from '../../support/testApp.js';

/**
 * Rate limits are decided by the store, so that processes sharing a data directory share each account's budget
 * exactly. Two handles on one directory (as two server processes have) spend at random, interleaved, against a
 * reference limiter that sees every call: each answer is the reference's, whichever handle asked.
 */

const windowMs = 60_000;

describe('Rate-limit budgets spent through several handles on one data directory', () => {
  const opened: { dir: string; stores: LmdbStore[] }[] = [];
  afterEach(async () => {
    for (const { dir, stores } of opened.splice(0)) {
      for (const store of stores) await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('answer every spend as one limiter seeing all of them would: none is granted twice', async () => {
    const dir = tempDataDir('airs-limits');
    const stores = [openLmdbStore(dir), openLmdbStore(dir)];
    opened.push({ dir, stores });
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 30 }),
        fc.array(fc.record({ handle: fc.nat(1), gap: fc.integer({ min: 0, max: 4_000 }), account: fc.nat(1) }), {
          minLength: 1,
          maxLength: 80,
        }),
        async (limit, steps) => {
          const reference = new Map<string, number>();
          run++;
          let now = 0;
          for (const { handle, gap, account } of steps) {
            now += gap;
            const accountId = `acct_${run}_${account}`;
            const expected = decideGcra({ limit, windowMs }, reference.get(accountId), now);
            reference.set(accountId, expected.tat);
            const [got] = await (stores[handle] as LmdbStore).spend([
              { accountId, budget: 'submits', limit, windowMs, now },
            ]);
            expect({ accountId, now, allowed: got?.allowed, remaining: got?.remaining }).toEqual({
              accountId,
              now,
              allowed: expected.allowed,
              remaining: expected.remaining,
            });
          }
        },
      ),
      { numRuns: 100 },
    );
  });
});
