import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createGoneOwners } from '../../src/app/processing/goneOwners.js';
import type { Command } from '../../src/domain/commands.js';
import { defaultRetryPolicy } from '../../src/domain/request/retryPolicy.js';
import { silentLogger } from '../../src/ports/Logger.js';
import type { StoreShape } from '../../src/ports/Store.js';
import { openStoreOf } from '../support/testStore.js';

/**
 * Dead owners on one machine (contract 17): a look at start (or when a sibling dies) ends the leases of processes that
 * are gone, and only theirs. Whatever the owners, the attempts each request took and the time, a request whose owner
 * still exists keeps its lease, its owner and its attempt (nothing is written for it); a request of a gone owner is a
 * lapsed lease afterwards, taken over by the next claim with its next attempt, or failed when no attempt is left;
 * a second look changes nothing.
 */

const t0 = 1_700_000_000_000;
const leaseMs = 30_000;

type Holder = { readonly owner: number; readonly attempts: number; readonly extendedBy: number };

const scenario = fc.record({
  /** For each owner, whether its process is gone. */
  gone: fc.array(fc.boolean(), { minLength: 1, maxLength: 4 }),
  /** Each request's owner (an index into `gone`), how many attempts it took before (each lapsed and taken over), and
   * how long its lease was extended. */
  requests: fc.array(
    fc.record({
      owner: fc.nat({ max: 3 }),
      attempts: fc.integer({ min: 1, max: 3 }),
      extendedBy: fc.integer({ min: 0, max: 60_000 }),
    }),
    { minLength: 1, maxLength: 12 },
  ),
  /** How long after the last start the look comes (some leases lapsed already). */
  after: fc.integer({ min: 0, max: 40_000 }),
});

const ownerName = (index: number) => `proc_owner${index}~${1000 + index}.abc.0123456789ab.xyz`;

describe('Leases of processes that no longer exist (contract 17)', () => {
  it('are ended at once, and the leases of a process that still exists never are', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ gone, requests, after }) => {
        const memory = openStoreOf('memory');
        const goneOwners = new Set(gone.flatMap((isGone, index) => (isGone ? [ownerName(index)] : [])));
        const looked: string[] = [];
        const store: StoreShape = {
          ...memory,
          owners: {
            name: (part) => `${part}_new`,
            gone: (owner) => {
              looked.push(owner);
              return goneOwners.has(owner);
            },
          },
        };
        const commit = async (commands: readonly Command[]) => store.commit({ commands });
        const holders = requests.map((request, i): Holder & { reqId: string } => ({
          ...request,
          owner: request.owner % gone.length,
          reqId: `req_${String(i).padStart(3, '0')}`,
        }));
        let now = t0;
        for (const { reqId } of holders) {
          await commit([
            {
              type: 'Submit',
              reqId,
              accountId: 'acct',
              keyId: 'key',
              model: 'm',
              promptChars: 1,
              prompt: 'x',
              ttlMs: 86_400_000,
              maxAttempts: 3,
              now,
            },
          ]);
        }
        // Each request's earlier attempts lapsed and were taken over; the last is its owner's.
        for (const holder of holders) {
          for (let attempt = 1; attempt <= holder.attempts; attempt++) {
            const owner = attempt === holder.attempts ? ownerName(holder.owner) : `proc_earlier${attempt}`;
            const [outcome] = await commit([{ type: 'StartAttempt', reqId: holder.reqId, owner, leaseMs, now }]);
            expect(outcome && 'events' in outcome && outcome.events.length).toBe(1);
            if (attempt < holder.attempts) now += leaseMs;
          }
          if (holder.extendedBy > 0)
            await commit([
              {
                type: 'ExtendLease',
                reqId: holder.reqId,
                owner: ownerName(holder.owner),
                attempt: holder.attempts,
                leaseMs: leaseMs + holder.extendedBy,
                now,
              },
            ]);
        }
        const lookAt = now + after;
        const before = new Map(
          await Promise.all(holders.map(async ({ reqId }) => [reqId, await store.reads.request(reqId)] as const)),
        );
        const taker = createGoneOwners({
          store,
          send: async (c) => (await commit([c]))[0]!,
          now: () => lookAt,
          log: silentLogger(),
        });
        const taken = await taker.takeUp();

        let ended = 0;
        for (const holder of holders) {
          const was = before.get(holder.reqId)!;
          const is = (await store.reads.request(holder.reqId))!;
          const running = (was.context.leaseUntil ?? 0) > lookAt;
          if (!goneOwners.has(ownerName(holder.owner)) || !running) {
            // A live owner's lease, or one that lapsed already: exactly as it was.
            expect(is).toEqual(was);
          } else {
            ended++;
            expect(is.status).toBe('processing');
            expect(is.context.owner).toBe(was.context.owner);
            expect(is.context.attempts).toBe(was.context.attempts);
            expect(is.context.leaseUntil).toBe(lookAt);
          }
        }
        expect(taken).toEqual({ requests: ended, batches: 0 });
        // Only the owners of leases that still ran were asked about.
        for (const owner of looked) expect(owner.startsWith('proc_owner')).toBe(true);

        // A second look finds nothing more to end.
        const events = (await store.reads.lastSeq()) ?? 0;
        expect(await taker.takeUp()).toEqual({ requests: 0, batches: 0 });
        expect(await store.reads.lastSeq()).toBe(events);

        // The next claim takes over each ended lease as a lapsed one (an attempt counts), never a live owner's.
        await commit([
          {
            type: 'Claim',
            owner: 'proc_new',
            now: lookAt,
            leaseMs,
            max: 100,
            modelLimits: {},
            policy: defaultRetryPolicy,
          },
        ]);
        for (const holder of holders) {
          const was = before.get(holder.reqId)!;
          const is = (await store.reads.request(holder.reqId))!;
          const lapsed = (was.context.leaseUntil ?? 0) <= lookAt || goneOwners.has(ownerName(holder.owner));
          if (!lapsed) {
            expect(is.context.owner).toBe(ownerName(holder.owner));
            expect(is.context.attempts).toBe(holder.attempts);
            expect(is.status).toBe('processing');
          } else if (holder.attempts < 3) {
            expect(is.status).toBe('processing');
            expect(is.context.owner).toBe('proc_new');
            expect(is.context.attempts).toBe(holder.attempts + 1);
          } else {
            expect(is.status).toBe('failed');
          }
        }
      }),
      { numRuns: 150 },
    );
  });
});
