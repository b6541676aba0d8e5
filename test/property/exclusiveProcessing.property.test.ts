import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/ports/Clock.js';
import type { ModelProvider } from '../../src/ports/ModelProvider.js';
import { type Client, submit, transports } from '../http/support/contract.js';
import { eventually, startTestApp, syncReads, type TestApp, tempDataDir } from '../support/testApp.js';

/**
 * A request reaches a worker in three ways: with its own submit (the submit carries its start when a worker is free
 * and nothing waits), from the queue (accounts in turn), and as an orphan (being processed, nobody working on it:
 * after a restart, which the pool also looks for whenever it is woken). Whatever the mix, with retries after failed
 * attempts, no request may be in two model calls at once. The whole app runs here, submits go through its HTTP
 * face, and the one model provider is replaced by one that records which prompts (one per request) are in flight.
 */

type Behaviour = { readonly fails: boolean; readonly delayMs: number };

const recorder = {
  running: new Set<string>(),
  overlaps: [] as string[],
  calls: new Map<string, number>(),
  plans: new Map<string, readonly Behaviour[]>(),
};

const recorded: ModelProvider = {
  generate: async ({ prompt, signal }) => {
    if (recorder.running.has(prompt)) recorder.overlaps.push(prompt);
    recorder.running.add(prompt);
    const count = (recorder.calls.get(prompt) ?? 0) + 1;
    recorder.calls.set(prompt, count);
    const plan = recorder.plans.get(prompt) ?? [];
    const behaviour = plan[Math.min(count, plan.length) - 1] ?? { fails: false, delayMs: 0 };
    try {
      await sleep(behaviour.delayMs, undefined, { signal });
      if (behaviour.fails) throw new Error(`planned failure of call ${count}`);
      return { text: prompt, finishReason: 'stop' };
    } finally {
      recorder.running.delete(prompt);
    }
  },
};

const behaviours = fc.array(fc.record({ fails: fc.boolean(), delayMs: fc.integer({ min: 0, max: 4 }) }), {
  minLength: 1,
  maxLength: 3,
});

type Step =
  /** Submits sent together: the first may carry its start, the others queue behind it. */
  | { readonly kind: 'submits'; readonly requests: readonly { account: number; plan: readonly Behaviour[] }[] }
  /** Time passes on the app's clock (retry backoffs end) and the pool is woken. */
  | { readonly kind: 'advance'; readonly ms: number }
  /** Real time passes (model calls progress). */
  | { readonly kind: 'pause'; readonly ms: number }
  /** The server stops (calls in flight are aborted, nothing written) and starts again on the same data. */
  | { readonly kind: 'restart' }
  /** One of the requests so far is cancelled by its account, whatever state it is in. */
  | { readonly kind: 'cancel'; readonly pick: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('submits' as const),
      requests: fc.array(fc.record({ account: fc.integer({ min: 0, max: 2 }), plan: behaviours }), {
        minLength: 1,
        maxLength: 6,
      }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 8_000 }) }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('pause' as const), ms: fc.integer({ min: 0, max: 6 }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }) },
);

const workload = fc.record({
  concurrency: fc.integer({ min: 1, max: 4 }),
  steps: fc.array(step, { minLength: 1, maxLength: 10 }),
});

const maxAttempts = 3;
const config = {
  models: [{ id: 'recorded', provider: 'echo' as const, delayMs: 0, timeoutMs: 60_000 }],
  requestTtlSeconds: 86_400,
};

describe('The worker pool with submits that carry their start, retries, restarts and orphans', () => {
  let runs = 0;

  it('never has two model calls in flight for one request, calls the model at most once per recorded start, and never completes a cancelled request', async () => {
    await fc.assert(
      fc.asyncProperty(workload, async ({ concurrency, steps }) => {
        const run = ++runs;
        recorder.running.clear();
        recorder.overlaps.length = 0;
        recorder.calls.clear();
        recorder.plans.clear();
        const dataDir = tempDataDir('airs-exclusive');
        const clock = new ManualClock();
        const options = {
          dataDir,
          clock,
          config: { ...config, processing: { concurrency, maxAttempts } },
          createProvider: () => recorded,
        };
        let app: TestApp = await startTestApp(options);
        let client: Client = await (transports[0] as (typeof transports)[number]).open(app);
        const accounts = [];
        for (let i = 0; i < 3; i++) accounts.push(await app.account('enterprise'));
        const keys = accounts.map((account) => account.key);
        const reqIds: string[] = [];
        const ownerOf = new Map<string, number>();
        let prompts = 0;
        try {
          for (const s of steps) {
            if (s.kind === 'submits') {
              const sent = s.requests.map(({ account, plan }) => {
                const prompt = `run ${run} prompt ${++prompts}`;
                recorder.plans.set(prompt, plan);
                return submit(client, keys[account] as string, 'recorded', prompt).then((reqId) => {
                  ownerOf.set(reqId, account);
                  return reqId;
                });
              });
              reqIds.push(...(await Promise.all(sent)));
            } else if (s.kind === 'cancel') {
              const reqId = reqIds[s.pick % Math.max(1, reqIds.length)];
              const owner = reqId === undefined ? undefined : accounts[ownerOf.get(reqId) ?? 0];
              if (reqId !== undefined && owner !== undefined)
                await app.requests.cancel(
                  { accountId: owner.accountId, keyId: owner.keyId, plan: 'enterprise' },
                  reqId,
                );
            } else if (s.kind === 'advance') {
              clock.advance(s.ms);
              app.processor.wake();
            } else if (s.kind === 'pause') {
              await sleep(s.ms);
            } else {
              await client.close();
              await app.stop({ keepData: true });
              app = await startTestApp(options);
              client = await (transports[0] as (typeof transports)[number]).open(app);
            }
          }
          // Work until every request settled, moving the clock past each retry's backoff.
          await eventually(async () => {
            app.processor.wake();
            await app.processor.idle();
            const open = reqIds.filter(
              (id) => !['completed', 'failed', 'cancelled'].includes(syncReads(app).request(id)?.status ?? ''),
            );
            if (open.length === 0) return true;
            clock.advance(30_000);
            return undefined;
          }, 20_000);
          const starts = new Map<string, number>();
          const cancelled = new Set<string>();
          const outcomes = new Map<string, string[]>();
          for (const event of syncReads(app).events()) {
            if (event.type === 'RequestProcessingStarted') starts.set(event.reqId, (starts.get(event.reqId) ?? 0) + 1);
            if (event.type === 'RequestCancelled') cancelled.add(event.reqId);
            if ('reqId' in event) outcomes.set(event.reqId, [...(outcomes.get(event.reqId) ?? []), event.type]);
          }
          expect(recorder.overlaps).toEqual([]);
          // A cancelled request is never completed, and nothing is recorded for it after its cancellation.
          for (const reqId of cancelled) expect(outcomes.get(reqId)?.at(-1), reqId).toBe('RequestCancelled');
          reqIds.forEach((reqId, i) => {
            const prompt = `run ${run} prompt ${i + 1}`;
            const calls = recorder.calls.get(prompt) ?? 0;
            if (!cancelled.has(reqId)) expect(calls, reqId).toBeGreaterThan(0);
            expect({ reqId, calls }).toEqual({ reqId, calls: Math.min(calls, starts.get(reqId) ?? 0) });
          });
        } finally {
          await client.close();
          await app.stop();
        }
      }),
      { numRuns: 30 },
    );
  }, 60_000);
});
