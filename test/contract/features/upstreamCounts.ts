import { describe, expect, it } from 'vitest';
import { modelCounter, upstreamCounter } from '../../../src/domain/processingCounters.js';
import type { UpstreamPlace } from '../../../src/domain/upstreamChoice.js';
import type { Contract } from '../contract.js';
import { answer, ask, createAccount, oneToN, queueOf, submit } from '../fixtures.js';

const fleet: readonly UpstreamPlace[] = [
  { name: 'a', places: 2 },
  { name: 'b', places: 1 },
];

/**
 * Contract 19, seen from outside: `reads.processingCount` is what `airs models list` and `/metrics` show as an
 * upstream's calls in flight, counted by every process and node, and read by any of them.
 */
export const upstreamCountFeatures = ({ pair }: Contract) =>
  describe("an upstream's calls in flight, read", () => {
    it("reads each upstream's calls in flight from another process or node, and reads them fall as calls end", async () => {
      const [first, second] = await pair();
      const submits = oneToN(4).map((n) => submit(`req_${n}`, { model: 'llama', now: 1_000 + n }));
      await first.commit({ commands: [createAccount(1), ...submits] });
      const claimed = await queueOf(first).claim(ask('A', 2_000, { max: 4, upstreams: { llama: fleet } }));
      expect(claimed.started).toHaveLength(3);
      const read = async () => ({
        a: await second.reads.processingCount(upstreamCounter('llama', 'a')),
        b: await second.reads.processingCount(upstreamCounter('llama', 'b')),
        model: await second.reads.processingCount(modelCounter('llama')),
        unknown: await second.reads.processingCount(upstreamCounter('llama', 'z')),
      });
      expect(await read()).toEqual({ a: 2, b: 1, model: 3, unknown: 0 });
      const onB = claimed.started.find((started) => started.upstream === 'b');
      if (onB === undefined) throw new Error('nothing started on b');
      expect(await queueOf(first).recordSuccess({ ...onB, owner: 'A' }, answer('ok'), 3_000)).toBe('recorded');
      expect(await read()).toEqual({ a: 2, b: 0, model: 2, unknown: 0 });
    });
  });
