/**
 * The rate limiter's cost per call: one `take` through Effect as the HTTP adapter calls it, each spend decided by
 * the LMDB store (limiter environment, one synchronous write per spend), so exact across processes.
 * Run: `npm run build && node dist/test/bench/limiter.js`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Effect, Layer } from 'effect';
import { openLmdbStore } from '../../src/adapters/lmdb/LmdbStore.js';
import { AppConfigLayer } from '../../src/app/AppConfig.js';
import type { Principal } from '../../src/app/Auth.js';
import { RateLimiter, RateLimiterLayer } from '../../src/app/RateLimiter.js';
import { defaultConfig } from '../../src/config.js';
import { AppClock, systemClock } from '../../src/ports/Clock.js';
import { Store } from '../../src/ports/Store.js';

const dir = mkdtempSync(join(tmpdir(), 'airs-limiter-bench-'));
const store = openLmdbStore(dir);
const layer = RateLimiterLayer.pipe(
  Layer.provide(
    Layer.mergeAll(AppConfigLayer(defaultConfig()), Layer.succeed(AppClock, systemClock), Layer.succeed(Store, store)),
  ),
);
const limiter = Effect.runSync(Effect.provide(RateLimiter, layer));
const accounts = 10_000;
const principals: Principal[] = Array.from({ length: accounts }, (_, i) => ({
  accountId: `acct_${i}`,
  keyId: 'k',
  plan: 'enterprise',
}));

const run = async (calls: number) => {
  const started = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) {
    await limiter.take(principals[i % accounts] as Principal, i % 2 ? 'polls' : 'submits');
  }
  return Number(process.hrtime.bigint() - started) / calls;
};

await run(20_000); // warm-up
const samples = [await run(100_000), await run(100_000), await run(100_000)].sort((a, b) => a - b);
const median = samples[1] as number;
console.log(
  JSON.stringify({
    bench: 'limiter.take',
    accounts,
    nsPerCall: Math.round(median),
    samples: samples.map(Math.round),
    heapMiB: Math.round(process.memoryUsage().heapUsed / 2 ** 20),
  }),
);
await store.close();
rmSync(dir, { recursive: true, force: true });
