import { rmSync } from 'node:fs';
import { openLmdbStore } from '../../src/adapters/lmdb/LmdbStore.js';
import { openMemoryStore } from '../../src/adapters/memory/MemoryStore.js';
import { createTokenBudget } from '../../src/app/tokenBudget.js';
import { defaultPlans } from '../../src/domain/plans.js';
import type { StoreShape } from '../../src/ports/Store.js';
import { accountId, commitOne, createAccount, queueOf, submit } from '../contract/fixtures.js';
import { tempDataDir } from '../support/testApp.js';

/**
 * The CPU cost of a submit's token check (contract 21, issue 42): `npm run build && node dist/test/bench/tokenCheck.js`.
 * An account whose buckets are full (a request ended in each of the last 60 seconds, plus its day and month) is checked
 * `n` times against limits it is under; and an account without token limits (no read at all). µs of CPU per check.
 */
const n = 200_000;
const now = Date.UTC(2026, 5, 15, 12);
const limited = {
  ...defaultPlans,
  free: { ...defaultPlans.free, tokensPerMinute: 1e12, tokensPerDay: 1e12, tokensPerMonth: 1e12 },
};
const principal = { accountId: accountId(1), plan: 'free' as const };

const fill = async (store: StoreShape) => {
  await commitOne(store, createAccount(1));
  const queue = queueOf(store);
  for (let i = 0; i < 60; i++) {
    const reqId = `req_bench_${i}`;
    const at = now - 59_000 + i * 1000;
    await commitOne(store, submit(reqId, { now: at, ttlMs: 3_600_000 }));
    await commitOne(store, { type: 'StartAttempt', reqId, now: at, owner: 'A', leaseMs: 60_000 });
    await queue.recordSuccess({ reqId, attempt: 1, owner: 'A' }, { text: 'hi', inputTokens: 1, outputTokens: 1 }, at);
  }
};

const measure = async (label: string, store: StoreShape) => {
  await fill(store);
  const buckets = (await store.reads.tokenUse(principal.accountId)).length;
  for (const [what, plans] of [
    ['with token limits', limited],
    ['without token limits', defaultPlans],
  ] as const) {
    const budget = createTokenBudget({ reads: store.reads, plans: () => plans, now: () => now });
    for (let i = 0; i < 10_000; i++) await budget.check(principal);
    const before = process.cpuUsage();
    for (let i = 0; i < n; i++) {
      const check = budget.check(principal);
      if (check !== undefined && (await check) !== undefined) throw new Error('refused');
    }
    const used = process.cpuUsage(before);
    console.info(
      `${label}, ${what} (${buckets} buckets): ${((used.user + used.system) / n).toFixed(2)} µs of CPU per check`,
    );
  }
};

const dataDir = tempDataDir('airs-token-check');
try {
  await measure('memory', openMemoryStore());
  await measure('LMDB', openLmdbStore(dataDir));
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
