import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Principal } from '../../src/app/Auth.js';
import type { ModelsShape } from '../../src/app/Models.js';
import { defaultConfig, type ModelConfig } from '../../src/config.js';
import { defaultPlans, type PlanName, type PlanTable } from '../../src/domain/plans.js';
import { backoffDelayMs, defaultRetryPolicy } from '../../src/domain/request/retryPolicy.js';
import type { RequestStatus } from '../../src/domain/request/state.js';
import type { RequestedTier } from '../../src/domain/serviceTier.js';
import type { StoreShape } from '../../src/ports/Store.js';
import { checkingClaimRules } from '../support/simulation/claimRules.js';
import { type CallBehaviour, createSimModel } from '../support/simulation/simModel.js';
import { type SimNode, simIds, startSimNode } from '../support/simulation/simNode.js';
import { type MemoryStore, openStoreOf } from '../support/testStore.js';

/**
 * Liveness of the worker pool, in simulated time: whatever happened before (submits, cancels, model calls that fail,
 * hang or answer after their timeout, crashes with commits in flight, expiries), once nothing more comes from outside,
 * every request the store holds reaches a final state within its retry budget, no request is ever in two model
 * calls at once, and none is started at or after its deadline (`Cancel-After`, contract 20), whatever the requests'
 * service tiers; and a `default` request waits no longer than `promoteAfterSeconds` and one call while priority work
 * keeps every worker busy. Two server processes run at once on fake timers over one in-memory store (each hears of the other's
 * commits as it would through the store's change notifications); fast-check chooses the inputs and which process
 * takes them, when time moves, the order in which commits land and their callers hear back, and which process dies.
 */

const timeoutMs = 1_000;
/** A model slower than a lease: its calls outlive the lease they started under unless it is extended. */
const longTimeoutMs = 5_000;
const maxAttempts = 3;
/** Short, so that crashes leave leases that lapse within a run (and longer than a model call, as in real use). */
const leaseSeconds = 3;
const sweepIntervalMs = 1_000;
const finalStatuses: ReadonlySet<RequestStatus> = new Set(['completed', 'failed', 'cancelled', 'expired']);

/** Server processes running at once on the store. */
const processes = 2;

// With a delay, as a real upstream: each call can be aborted on its own (a cancel, a lease given up).
const models: readonly ModelConfig[] = [
  { id: 'sim', provider: 'echo', delayMs: 1, timeoutMs },
  // One call at a time, across both processes: each passes its requests over while the model is busy.
  { id: 'sim-one', provider: 'echo', delayMs: 1, timeoutMs, maxConcurrency: 1 },
  { id: 'sim-long', provider: 'echo', delayMs: 1, timeoutMs: longTimeoutMs },
];

const behaviour: fc.Arbitrary<CallBehaviour> = fc.record({
  kind: fc.constantFrom('ok', 'ok', 'fail', 'hang', 'late'),
  delayMs: fc.integer({ min: 0, max: 2 * longTimeoutMs }),
});

type Step =
  | {
      readonly kind: 'submit';
      readonly node: number;
      readonly account: number;
      readonly model: string;
      readonly plan: CallBehaviour[];
      /** A `Cancel-After` in seconds (contract 20), or none. */
      readonly cancelAfter: number | undefined;
      /** The `service_tier` asked for (contract 20), or none. */
      readonly serviceTier: RequestedTier | undefined;
    }
  | { readonly kind: 'cancel'; readonly node: number; readonly pick: number }
  /** Let `count` scheduled commits land (or their callers hear back), in an order fast-check picks. */
  | { readonly kind: 'release'; readonly count: number }
  | { readonly kind: 'advance'; readonly ms: number }
  /**
   * A process dies; the first `landing` of its commits in flight were durable. A new one starts in its place, or (while
   * another runs) none does: the others must take up what it held.
   */
  | { readonly kind: 'crash'; readonly node: number; readonly landing: number; readonly restart: boolean };

const node = fc.integer({ min: 0, max: processes - 1 });

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('submit' as const),
      node,
      account: fc.integer({ min: 0, max: 2 }),
      model: fc.constantFrom('sim', 'sim', 'sim-one', 'sim-long'),
      plan: fc.array(behaviour, { minLength: 1, maxLength: 4 }),
      cancelAfter: fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
      serviceTier: fc.constantFrom(undefined, 'auto', 'default', 'flex', 'priority'),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('cancel' as const), node, pick: fc.nat() }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('release' as const), count: fc.integer({ min: 1, max: 6 }) }) },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 3_000 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('crash' as const),
      node,
      landing: fc.integer({ min: 0, max: 3 }),
      restart: fc.boolean(),
    }),
  },
);

const scenario = fc.record({
  concurrency: fc.integer({ min: 1, max: 4 }),
  maxProcessing: fc.constantFrom(1, 2, null),
  maxAccountShare: fc.constantFrom(0.5, 0.75, 1),
  // Long enough that expiry cannot rescue a request the pool forgot, or short enough that expiry is part of the story.
  ttlSeconds: fc.constantFrom(86_400, 86_400, 5, 30),
  steps: fc.array(step, { minLength: 1, maxLength: 30 }),
});

/** Accounts 0 and 1 are on the free plan (a bound of requests being processed, `maxProcessing`); 2 on enterprise. */
const planOf = (account: number): PlanName => (account < 2 ? 'free' : 'enterprise');
const principal = (account: number): Principal => ({
  accountId: `acct_sim_${account}`,
  keyId: `key_sim_${account}`,
  plan: planOf(account),
});

/** The accounts of the simulation, made in the store before any process starts. */
const accountsMade = (store: StoreShape) =>
  store.commit({
    commands: [0, 1, 2].map((account) => ({
      type: 'Account' as const,
      accountId: principal(account).accountId,
      command: {
        type: 'CreateAccount' as const,
        accountId: principal(account).accountId,
        email: `sim${account}@example.com`,
        plan: planOf(account),
        now: Date.now(),
      },
    })),
  });

/**
 * The most simulated time the pool may need, once input stops, to bring every request to a final state: each request
 * at most `maxAttempts` attempts (a crash's orphan takes one more, which then gives up at once), each ending within
 * its timeout and followed by at most the longest backoff; requests of the one-at-a-time model wait for each other;
 * what a crashed process held waits for its lease to lapse.
 */
const budgetMs = (requests: number) => {
  const longestBackoff = Math.min(defaultRetryPolicy.maxDelayMs, defaultRetryPolicy.baseDelayMs * 2 ** maxAttempts);
  return (
    (requests + 1) * (maxAttempts + 1) * (longTimeoutMs + longestBackoff) + leaseSeconds * 1000 + 5 * sweepIntervalMs
  );
};

/** Every attempt the log shows started at or after its request's deadline (`Cancel-After`): there must be none. */
const startsPastDeadline = (store: MemoryStore) => {
  const deadlines = new Map<string, number>();
  const late: { reqId: string; at: number; deadlineAt: number }[] = [];
  for (const event of store.syncReads.events()) {
    if (event.type === 'RequestQueued' && event.deadlineAt !== undefined) deadlines.set(event.reqId, event.deadlineAt);
    if (event.type !== 'RequestProcessingStarted') continue;
    const deadlineAt = deadlines.get(event.reqId);
    if (deadlineAt !== undefined && event.at >= deadlineAt) late.push({ reqId: event.reqId, at: event.at, deadlineAt });
  }
  return late;
};

describe('The worker pool, simulated', () => {
  beforeEach(() => {
    vi.useFakeTimers({
      now: Date.UTC(2026, 0, 1),
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'clearImmediate', 'Date'],
    });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('brings every stored request to a final state within its retry budget once input stops, whatever its service tier, never starts a request at or after its Cancel-After deadline, never runs one request in two model calls at once, holds every account within its maxProcessing, and never gives a worker to an account over its share of the model while another account’s request of it waits', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), scenario, async (scheduler, scenario) => {
        const { concurrency, ttlSeconds, steps, maxProcessing, maxAccountShare } = scenario;
        vi.clearAllTimers();
        const plans: PlanTable = { ...defaultPlans, free: { ...defaultPlans.free, maxProcessing } };
        const checked = checkingClaimRules(openStoreOf('memory'), plans);
        const store = checked.store;
        await accountsMade(store);
        const model = createSimModel(timeoutMs);
        const modelsShape: ModelsShape = {
          get: (id) => {
            const config = models.find((m) => m.id === id);
            return config === undefined ? undefined : { config, provider: model.provider };
          },
          ids: () => models.map((m) => m.id),
        };
        const config = defaultConfig({
          models,
          requestTtlSeconds: ttlSeconds,
          plans,
          processing: {
            concurrency,
            maxAttempts,
            leaseSeconds,
            maxAccountShare,
            maxBacklog: 1_000_000,
            // Short: promotion happens within a run.
            promoteAfterSeconds: 2,
          },
        });
        const ids = simIds();
        const clock = { now: () => Date.now() };
        const start = () =>
          startSimNode({ store, scheduler, models: modelsShape, config, clock, ids, sweepIntervalMs });
        const nodes: (SimNode | undefined)[] = Array.from({ length: processes }, start);
        /** The process a step names, or the next one running if it is dead. */
        const running = (index: number) => nodes[index] ?? (nodes.find((each) => each !== undefined) as SimNode);
        const accepted: { reqId: string; account: number }[] = [];
        let prompts = 0;

        for (const s of steps) {
          if (s.kind === 'submit') {
            const prompt = `prompt ${++prompts}`;
            model.plan(prompt, s.plan);
            const cancelAfter = s.cancelAfter === undefined ? undefined : `${s.cancelAfter}s`;
            void running(s.node)
              .requests.submit(
                principal(s.account),
                { model: s.model, prompt, service_tier: s.serviceTier },
                { cancelAfter },
              )
              .then((outcome) => {
                if ('reqId' in outcome) accepted.push({ reqId: outcome.reqId, account: s.account });
              });
          } else if (s.kind === 'cancel') {
            const target = accepted[s.pick % Math.max(1, accepted.length)];
            if (target !== undefined) void running(s.node).requests.cancel(principal(target.account), target.reqId);
          } else if (s.kind === 'release') {
            for (let i = 0; i < s.count && scheduler.count() > 0; i++) await scheduler.waitOne();
          } else if (s.kind === 'advance') {
            await vi.advanceTimersByTimeAsync(s.ms);
          } else {
            const victim = nodes[s.node];
            const others = nodes.filter((each, index) => each !== undefined && index !== s.node).length;
            if (victim !== undefined) {
              victim.crash(s.landing);
              nodes[s.node] = s.restart || others === 0 ? start() : undefined;
            } else if (s.restart) nodes[s.node] = start();
          }
        }

        // From here on nothing comes from outside: only the scheduler's commits and the processes' own timers.
        const stored = () =>
          [...store.syncReads.events()].filter((e) => e.type === 'RequestQueued').map((e) => e.reqId);
        const unfinished = () =>
          stored().filter((reqId) => !finalStatuses.has(store.syncReads.request(reqId)?.status ?? 'none'));
        const deadline = Date.now() + budgetMs(prompts);
        while (Date.now() <= deadline && (scheduler.count() > 0 || unfinished().length > 0)) {
          await scheduler.waitAll();
          await vi.advanceTimersToNextTimerAsync();
        }
        await scheduler.waitAll();

        const open = unfinished().map((reqId) => {
          const state = store.syncReads.request(reqId);
          return { reqId, status: state?.status, attempts: state?.context.attempts };
        });
        expect(open, `unfinished after ${budgetMs(prompts)} ms of simulated time with no input`).toEqual([]);
        expect(model.overlaps()).toEqual([]);
        expect(checked.violations).toEqual([]);
        expect(startsPastDeadline(store), 'attempts started at or after their request’s deadline').toEqual([]);
        for (const each of nodes) each?.crash(0);
      }),
      { numRuns: 3_000 },
    );
    // About 20 s alone on a quiet 2-core machine; the bound leaves room for a machine loaded by other work.
  }, 180_000);

  it('starts a default request within promoteAfterSeconds and one call while a flood of priority work keeps every worker busy', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 50, max: 400 }),
        fc.integer({ min: 0, max: 1_000 }),
        async (scheduler, concurrency, callMs, defaultAtMs) => {
          vi.clearAllTimers();
          const store = openStoreOf('memory');
          await accountsMade(store);
          const model = createSimModel(timeoutMs);
          const modelsShape: ModelsShape = {
            get: (id) => {
              const config = models.find((m) => m.id === id);
              return config === undefined ? undefined : { config, provider: model.provider };
            },
            ids: () => models.map((m) => m.id),
          };
          const promoteAfterSeconds = 2;
          const config = defaultConfig({
            models,
            processing: {
              concurrency,
              maxAttempts,
              leaseSeconds: 3_600,
              maxAccountShare: 1,
              maxBacklog: 1_000_000,
              promoteAfterSeconds,
            },
          });
          const node = startSimNode({
            store,
            scheduler,
            models: modelsShape,
            config,
            clock: { now: () => Date.now() },
            ids: simIds(),
            sweepIntervalMs,
          });
          const began = Date.now();
          const until = began + 3 * promoteAfterSeconds * 1000;
          let prompts = 0;
          let waiting: string | undefined;
          let defaultAt: number | undefined;
          // Priority work of the enterprise account arrives faster than the workers end calls, until `until`.
          while (Date.now() < until) {
            for (let i = 0; i < concurrency; i++) {
              const prompt = `flood ${++prompts}`;
              model.plan(prompt, [{ kind: 'ok', delayMs: callMs }]);
              void node.requests.submit(principal(2), { model: 'sim', prompt, service_tier: 'priority' });
            }
            if (defaultAt === undefined && Date.now() >= began + defaultAtMs) {
              defaultAt = Date.now();
              model.plan('the default one', [{ kind: 'ok', delayMs: callMs }]);
              void node.requests.submit(principal(0), { model: 'sim', prompt: 'the default one' }).then((outcome) => {
                if ('reqId' in outcome) waiting = outcome.reqId;
              });
            }
            await scheduler.waitAll();
            await vi.advanceTimersByTimeAsync(Math.floor(callMs / 2));
          }
          await scheduler.waitAll();
          const startedAt = waiting === undefined ? undefined : store.syncReads.request(waiting)?.context.startedAt;
          expect(startedAt, 'the default request never started').toBeDefined();
          // Promoted after its wait, it goes in turn with the priority lane: the next worker that frees up is its. Here
          // a commit lands only at the next step of the loop (half a call later), and a start takes two (the freed
          // worker's outcome, then its claim): one call and two steps.
          const step = Math.floor(callMs / 2);
          expect((startedAt as number) - (defaultAt as number)).toBeLessThanOrEqual(
            promoteAfterSeconds * 1000 + callMs + 2 * step,
          );
          node.crash(0);
        },
      ),
      { numRuns: 40 },
    );
  }, 60_000);

  it('starts a failed attempt’s retry when its backoff ends, on a quiet process whose lease would not lapse for an hour', async () => {
    // The property above gives every request its whole retry budget, within which a lapsing lease (3 s) wakes the pool
    // anyway: a pool that forgot a retry until then still passes it. Here nothing else can wake it: one process, one
    // request, a lease of an hour, no other input; the retry must start when its backoff ends. The in-memory store
    // tells its listeners of every commit, the process's own too, which would wake the pool after its own outcome;
    // LMDB tells a process only of other processes' commits (changes.ts), so here, with one process, nobody is told.
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: timeoutMs - 1 }),
        async (scheduler, concurrency, failsAfterMs) => {
          vi.clearAllTimers();
          const store = openStoreOf('memory');
          const unheard: typeof store.reads = new Proxy(store.reads, {
            get: (target, name, receiver) =>
              name === 'onChange' ? () => () => {} : Reflect.get(target, name, receiver),
          });
          const model = createSimModel(timeoutMs);
          const modelsShape: ModelsShape = {
            get: (id) => {
              const config = models.find((m) => m.id === id);
              return config === undefined ? undefined : { config, provider: model.provider };
            },
            ids: () => models.map((m) => m.id),
          };
          const config = defaultConfig({
            models,
            processing: {
              concurrency,
              maxAttempts,
              leaseSeconds: 3_600,
              maxAccountShare: 0.75,
              maxBacklog: 1_000_000,
              promoteAfterSeconds: 60,
            },
          });
          const node = startSimNode({
            store: { ...store, reads: unheard },
            scheduler,
            models: modelsShape,
            config,
            clock: { now: () => Date.now() },
            ids: simIds(),
            sweepIntervalMs,
          });
          model.plan('quiet', [
            { kind: 'fail', delayMs: failsAfterMs },
            { kind: 'ok', delayMs: 0 },
          ]);
          let reqId: string | undefined;
          void node.requests.submit(principal(0), { model: 'sim', prompt: 'quiet' }).then((outcome) => {
            if ('reqId' in outcome) reqId = outcome.reqId;
          });
          // The first attempt fails within its timeout; the second starts at the end of its backoff and answers at once.
          const deadline = Date.now() + timeoutMs + backoffDelayMs(defaultRetryPolicy, 1) + 1_000;
          const status = () => (reqId === undefined ? undefined : store.syncReads.request(reqId)?.status);
          // Whatever is due now (a look set off when the worker was let go) runs before the next commit lands, as on a
          // real disk, where a commit takes longer than a turn of the event loop.
          while (Date.now() <= deadline && status() !== 'completed') {
            await vi.advanceTimersByTimeAsync(0);
            if (scheduler.count() > 0) await scheduler.waitOne();
            else await vi.advanceTimersToNextTimerAsync();
          }
          await scheduler.waitAll();
          expect(status(), `model calls: ${model.calls('quiet')}`).toBe('completed');
          expect(model.calls('quiet')).toBe(2);
          node.crash(0);
        },
      ),
      { numRuns: 100 },
    );
  }, 30_000);
});
