import { rmSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createCommitter } from '../../src/app/Committer.js';
import type { ModelsShape } from '../../src/app/Models.js';
import { createProcessor } from '../../src/app/processing/Processor.js';
import type { ModelConfig } from '../../src/config.js';
import { defaultRetryPolicy } from '../../src/domain/request/retryPolicy.js';
import { ManualClock } from '../../src/ports/Clock.js';
import { silentLogger } from '../../src/ports/Logger.js';
import { eventually, tempDataDir } from '../support/testApp.js';
import { openStoreOf } from '../support/testStore.js';

/** How the model answers one call: after some turns, with the prompt or an error. */
type Behaviour = { readonly fails: boolean; readonly delayMs: number };

const workload = fc.record({
  concurrency: fc.integer({ min: 1, max: 6 }),
  /** Each request's behaviour on its successive calls (the last one repeats). */
  requests: fc.array(
    fc.array(fc.record({ fails: fc.boolean(), delayMs: fc.integer({ min: 0, max: 3 }) }), {
      minLength: 1,
      maxLength: 3,
    }),
    {
      minLength: 1,
      maxLength: 25,
    },
  ),
});

/**
 * A model that records every call: which request (by its prompt), and whether another call for the same request
 * was still running when it began.
 */
const recordingModel = (behaviours: Map<string, Behaviour[]>) => {
  const calls = new Map<string, number>();
  const running = new Set<string>();
  const overlaps: string[] = [];
  const config: ModelConfig = { id: 'recorded', provider: 'echo', delayMs: 0, timeoutMs: 60_000 };
  const models: ModelsShape = {
    ids: () => ['recorded'],
    get: () => ({
      config,
      provider: {
        generate: async ({ prompt }) => {
          if (running.has(prompt)) overlaps.push(prompt);
          running.add(prompt);
          const count = (calls.get(prompt) ?? 0) + 1;
          calls.set(prompt, count);
          const plan = behaviours.get(prompt) ?? [];
          const behaviour = plan[Math.min(count, plan.length) - 1] ?? { fails: false, delayMs: 0 };
          try {
            await new Promise((resolve) => setTimeout(resolve, behaviour.delayMs));
            if (behaviour.fails) throw new Error(`planned failure ${count}`);
            return { text: prompt, finishReason: 'stop' as const };
          } finally {
            running.delete(prompt);
          }
        },
      },
    }),
  };
  return { models, calls, overlaps };
};

describe('The worker pool', () => {
  it('never works on one request in two workers at once, and calls the model at most once per recorded attempt', async () => {
    await fc.assert(
      fc.asyncProperty(workload, async ({ concurrency, requests }) => {
        const dir = tempDataDir('airs-pool');
        const store = openStoreOf('lmdb', dir);
        const committer = createCommitter(store);
        const clock = new ManualClock();
        const prompts = requests.map((_, i) => `prompt ${i}`);
        const { models, calls, overlaps } = recordingModel(new Map(prompts.map((p, i) => [p, requests[i] ?? []])));
        const policy = { ...defaultRetryPolicy, maxAttempts: 3 };
        const processor = createProcessor({
          store,
          committer,
          models,
          clock,
          log: silentLogger(),
          concurrency,
          policy,
          leaseMs: 30_000,
        });
        try {
          await Promise.all(
            prompts.map((prompt, i) =>
              committer.send({
                type: 'Submit',
                reqId: `req_${String(i).padStart(3, '0')}`,
                accountId: `acct_${i % 3}`,
                keyId: 'key',
                model: 'recorded',
                promptChars: prompt.length,
                prompt,
                ttlMs: 86_400_000,
                now: clock.now(),
              }),
            ),
          );
          // Work until every request settled, moving the clock past each retry's backoff.
          await eventually(async () => {
            processor.wake();
            await processor.idle();
            store.syncReads.refresh();
            // Settled: every request completed or failed (none waiting, none with an attempt still being recorded).
            const open = prompts.filter((_, i) => {
              const status = store.syncReads.request(`req_${String(i).padStart(3, '0')}`)?.status;
              return status !== 'completed' && status !== 'failed';
            }).length;
            if (open === 0) return true;
            clock.advance(policy.maxDelayMs);
            return undefined;
          }, 20_000);
          const starts = new Map<string, number>();
          for (const event of store.syncReads.events()) {
            if (event.type === 'RequestProcessingStarted') starts.set(event.reqId, (starts.get(event.reqId) ?? 0) + 1);
          }
          expect(overlaps).toEqual([]);
          prompts.forEach((prompt, i) => {
            const reqId = `req_${String(i).padStart(3, '0')}`;
            expect(calls.get(prompt) ?? 0).toBeLessThanOrEqual(starts.get(reqId) ?? 0);
            expect(calls.get(prompt) ?? 0).toBeGreaterThan(0);
            expect(['completed', 'failed']).toContain(store.syncReads.request(reqId)?.status);
          });
        } finally {
          await processor.stop();
          await committer.stop();
          await store.close();
          rmSync(dir, { recursive: true, force: true });
        }
      }),
      { numRuns: 25 },
    );
  });
});
