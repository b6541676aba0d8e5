/**
 * The rate limiter's cost per call: one `take` (GCRA decision, Map update, header status) through Effect, as the
 * HTTP adapter calls it. Run: `npm run build && node dist/test/bench/limiter.js`.
 */
import { Effect, Layer } from 'effect';
import { AppConfigLayer } from '../../src/app/AppConfig.js';
import type { Principal } from '../../src/app/Auth.js';
import { inMemoryLimiterStates, LimiterStates } from '../../src/app/LimiterStates.js';
import { RateLimiter, RateLimiterLayer } from '../../src/app/RateLimiter.js';
import { defaultConfig } from '../../src/config.js';
import { AppClock, systemClock } from '../../src/ports/Clock.js';

const layer = RateLimiterLayer.pipe(
  Layer.provide(
    Layer.mergeAll(
      AppConfigLayer(defaultConfig()),
      Layer.succeed(AppClock, systemClock),
      Layer.succeed(LimiterStates, inMemoryLimiterStates()),
    ),
  ),
);
const limiter = Effect.runSync(Effect.provide(RateLimiter, layer));
const accounts = 10_000;
const principals: Principal[] = Array.from({ length: accounts }, (_, i) => ({
  accountId: `acct_${i}`,
  keyId: 'k',
  plan: 'enterprise',
}));

const run = (calls: number) => {
  const started = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) {
    limiter.take(principals[i % accounts] as Principal, i % 2 ? 'polls' : 'submits');
  }
  return Number(process.hrtime.bigint() - started) / calls;
};

run(200_000); // warm-up
const samples = [run(1_000_000), run(1_000_000), run(1_000_000)].sort((a, b) => a - b);
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
