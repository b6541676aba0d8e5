import { describe, expect, it } from 'vitest';
import type { Command } from '../../../src/domain/commands.js';
import type { UpstreamPlace } from '../../../src/domain/upstreamChoice.js';
import type { StoreShape } from '../../../src/ports/Store.js';
import type { Claimed } from '../../../src/ports/WorkQueue.js';
import type { Contract } from '../contract.js';
import { answer, ask, commitOne, createAccount, eventsOf, oneToN, policy, queueOf, submit } from '../fixtures.js';

/** A model of three upstreams of unequal places (contract 19). */
const fleet: readonly UpstreamPlace[] = [
  { name: 'a', places: 3 },
  { name: 'b', places: 2 },
  { name: 'c', places: 1 },
];
const upstreams = { llama: fleet };
const submits = (count: number, now = 1_000): Command[] =>
  oneToN(count).map((n) => submit(`req_${String(n).padStart(2, '0')}`, { model: 'llama', now: now + n }));

/** Calls in flight per upstream, as the requests being processed say. */
const inFlight = async (store: StoreShape) => {
  const counts: Record<string, number> = {};
  for (const reqId of await store.reads.processing(100)) {
    const upstream = (await store.reads.request(reqId))?.context.upstream ?? 'none';
    counts[upstream] = (counts[upstream] ?? 0) + 1;
  }
  return counts;
};
const upstreamsOf = (claimed: Claimed) => claimed.started.map(({ upstream }) => upstream);

/**
 * Contract 19: each call of a model with upstreams goes to one with a free place, chosen in the store's write when work
 * is claimed (or a submit starts at once), so no upstream is ever above its places, over every process and node.
 */
export const upstreamPlaceFeatures = ({ pair, open }: Contract) =>
  describe("a model's upstreams and their places", () => {
    it('starts no more calls on an upstream than its places over claims of two owners, and each start names its upstream', async () => {
      const [first, second] = await pair();
      await first.commit({ commands: [createAccount(1), ...submits(10)] });
      const a = await queueOf(first).claim(ask('A', 2_000, { max: 4, upstreams }));
      expect(a.started).toHaveLength(4);
      const b = await queueOf(second).claim(ask('B', 2_000, { max: 10, upstreams }));
      // Six places in all: two more, then none while every upstream is full, though work is due and workers free.
      expect(b.started).toHaveLength(2);
      expect(await inFlight(first)).toEqual({ a: 3, b: 2, c: 1 });
      expect((await queueOf(second).claim(ask('B', 2_000, { max: 10, upstreams }))).started).toEqual([]);
      // A call on `c` ends: exactly one more may start, on `c`.
      const onC = [...a.started, ...b.started].find((started) => started.upstream === 'c');
      if (onC === undefined) throw new Error('nothing started on c');
      expect(
        await queueOf(first).recordSuccess({ ...onC, owner: a.started.includes(onC) ? 'A' : 'B' }, answer('ok'), 3_000),
      ).toBe('recorded');
      const c = await queueOf(second).claim(ask('B', 3_000, { max: 10, upstreams }));
      expect(upstreamsOf(c)).toEqual(['c']);
      expect(await inFlight(first)).toEqual({ a: 3, b: 2, c: 1 });
    });

    it('frees an upstream place on a retry and a give-back, and keeps a model without upstreams as it was', async () => {
      const store = await open();
      const queue = queueOf(store);
      await store.commit({
        commands: [createAccount(1), ...submits(8), submit('req_echo', { model: 'echo', now: 1_500 })],
      });
      const solo = { llama: [{ name: 'only', places: 2 }] };
      const first = await queue.claim(ask('A', 2_000, { max: 10, upstreams: solo }));
      // Two on `only`; the echo request runs on no upstream.
      expect(upstreamsOf(first).sort()).toEqual(['only', 'only', undefined]);
      const [one, two] = first.started.filter((started) => started.upstream === 'only');
      if (one === undefined || two === undefined) throw new Error('two calls should have started');
      expect(await queue.recordFailure({ ...one, owner: 'A' }, 'upstream 500', policy, 2_100)).toBe('recorded');
      expect(upstreamsOf(await queue.claim(ask('A', 2_200, { max: 10, upstreams: solo })))).toEqual(['only']);
      await queue.release({ ...two, owner: 'A' }, 2_300);
      expect(upstreamsOf(await queue.claim(ask('A', 2_400, { max: 10, upstreams: solo })))).toEqual(['only']);
      expect((await queue.claim(ask('A', 2_500, { max: 10, upstreams: solo }))).started).toEqual([]);
    });

    it('starts a submit at once only on an upstream with a free place, and queues it when all are full', async () => {
      const store = await open();
      await store.commit({ commands: [createAccount(1)] });
      const startNow = (n: number) =>
        commitOne(store, {
          ...submit(`req_now_${n}`, { model: 'llama', now: 1_000 + n }),
          startNow: { owner: 'A', leaseMs: 10_000 },
          upstreams: [
            { name: 'x', places: 1 },
            { name: 'y', places: 1 },
          ],
        } as Command);
      const started = async (n: number) =>
        eventsOf(await startNow(n)).flatMap((event) =>
          event.type === 'RequestProcessingStarted' ? [event.upstream] : [],
        );
      expect(await started(1)).toHaveLength(1);
      expect(await started(2)).toHaveLength(1);
      expect(await inFlight(store)).toEqual({ x: 1, y: 1 });
      // Both full: queued, not started.
      expect(await started(3)).toEqual([]);
    });

    it("starts a submit at once only on an upstream in service in the submitting process's health view", async () => {
      const store = await open();
      await store.commit({ commands: [createAccount(1)] });
      const out = { failures: 3, outUntil: 60_000, coolDownMs: 10_000 };
      const startNow = (n: number, more: Record<string, unknown>) =>
        commitOne(store, {
          ...submit(`req_view_${n}`, { model: 'llama', now: 1_000 + n }),
          startNow: { owner: 'A', leaseMs: 10_000 },
          ...more,
        } as Command);
      const started = async (n: number, more: Record<string, unknown>) =>
        eventsOf(await startNow(n, more)).flatMap((event) =>
          event.type === 'RequestProcessingStarted' ? [event.upstream ?? 'unplaced'] : [],
        );
      const two = [
        { name: 'x', places: 4 },
        { name: 'y', places: 4 },
      ];
      expect(await started(1, { upstreams: two, health: { llama: { x: out } } })).toEqual(['y']);
      // A model of one upstream (not placed) in service: started at once; out of service: queued, not started.
      expect(await started(2, {})).toEqual(['unplaced']);
      expect(await started(3, { health: { llama: { '0': out } } })).toEqual([]);
    });

    it('moves a failed-over attempt with its place to a free upstream not tried, and records a failure when none is left', async () => {
      const store = await open();
      const queue = queueOf(store);
      const two = {
        llama: [
          { name: 'a', places: 1 },
          { name: 'b', places: 2 },
        ],
      };
      await store.commit({ commands: [createAccount(1), ...submits(3)] });
      const first = await queue.claim(ask('A', 2_000, { max: 2, upstreams: two }));
      expect(upstreamsOf(first)).toEqual(['a', 'b']);
      const [onA, onB] = first.started;
      if (onA === undefined || onB === undefined) throw new Error('two calls should have started');
      const failOver = (held: { reqId: string; attempt: number }, owner: string, from: string, tried: string[]) =>
        queue.failOver(
          { ...held, owner },
          { model: 'llama', from, tried, upstreams: two.llama, reason: 'connection refused', policy },
          2_100,
        );
      // Only the attempt's holder may move it.
      expect(await failOver(onA, 'B', 'a', [])).toBe('refused');
      expect(await failOver(onA, 'A', 'a', [])).toEqual({ moved: 'b' });
      expect(await inFlight(store)).toEqual({ b: 2 });
      expect((await store.reads.request(onA.reqId))?.context).toMatchObject({ upstream: 'b', attempts: 1 });
      // Its place on `a` is free: the next request goes there.
      expect(upstreamsOf(await queue.claim(ask('A', 2_200, { max: 10, upstreams: two })))).toEqual(['a']);
      // Every upstream tried or full: the attempt fails as any failure does (a retry later), and frees its place.
      expect(await failOver(onB, 'A', 'b', ['a'])).toBe('recorded');
      expect((await store.reads.request(onB.reqId))?.status).toBe('waiting');
      expect(await inFlight(store)).toEqual({ a: 1, b: 1 });
    });

    it('spills a request that waited spillAfterSeconds while its upstreams are full over to a fallback, within its bound', async () => {
      const store = await open();
      const queue = queueOf(store);
      const spill = {
        upstreams: {
          llama: [
            { name: 'a', places: 1 },
            { name: 'b', places: 1 },
          ],
        },
        fallbacks: { llama: { models: ['hosted'], spillAfterMs: 5_000 } },
        modelLimits: { llama: 2, hosted: 1 },
        max: 10,
      };
      await store.commit({ commands: [createAccount(1), ...submits(4)] });
      expect(upstreamsOf(await queue.claim(ask('A', 2_000, spill)))).toEqual(['a', 'b']);
      // Full, and not waited long enough: nothing.
      expect((await queue.claim(ask('A', 4_000, spill))).started).toEqual([]);
      const spilled = await queue.claim(ask('A', 7_000, spill));
      expect(spilled.started.map(({ servedBy }) => servedBy)).toEqual(['hosted']);
      const [onHosted] = spilled.started;
      if (onHosted === undefined) throw new Error('nothing spilled');
      expect((await store.reads.request(onHosted.reqId))?.context).toMatchObject({
        model: 'llama',
        servedBy: 'hosted',
      });
      // The fallback's bound holds: one at a time.
      expect((await queue.claim(ask('A', 7_100, spill))).started).toEqual([]);
      expect(await queue.recordSuccess({ ...onHosted, owner: 'A' }, answer('from hosted'), 7_200)).toBe('recorded');
      expect((await queue.claim(ask('A', 7_300, spill))).started.map(({ servedBy }) => servedBy)).toEqual(['hosted']);
    });

    it("never spills beyond the fallback's bound, counting the fallback's own requests started by the same claim", async () => {
      const store = await open();
      const spill = {
        upstreams: {
          llama: [
            { name: 'a', places: 1 },
            { name: 'b', places: 1 },
          ],
        },
        fallbacks: { llama: { models: ['hosted'], spillAfterMs: 1_000 } },
        modelLimits: { llama: 2, hosted: 1 },
        max: 10,
      };
      await store.commit({
        commands: [createAccount(1), submit('req_hosted', { model: 'hosted', now: 500 }), ...submits(3)],
      });
      const claimed = await queueOf(store).claim(ask('A', 9_000, spill));
      const onHosted = await Promise.all(
        claimed.started.map(async ({ reqId }) => {
          const context = (await store.reads.request(reqId))?.context;
          return (context?.servedBy ?? context?.model) === 'hosted';
        }),
      );
      expect(onHosted.filter(Boolean)).toHaveLength(1);
      expect(claimed.started).toHaveLength(3);
    });
  });
