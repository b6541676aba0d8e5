import { describe, expect, it } from 'vitest';
import { claimFairly, type DispatchReads, type QueuedEntry } from '../../src/domain/claimFairly.js';
import { dispatchLaneOf } from '../../src/domain/dispatchLane.js';
import {
  type QueuedRequest,
  queuePositionCap,
  queuePositionFromTallies,
  queuePositionOf,
} from '../../src/domain/queuePosition.js';

const now = 100_000;
const promoteAfterMs = 60_000;

const lane = {
  aDefault: dispatchLaneOf({ accountId: 'acc_a' }),
  aPriority: dispatchLaneOf({ accountId: 'acc_a', serviceTier: 'priority' }),
  aFlex: dispatchLaneOf({ accountId: 'acc_a', serviceTier: 'flex' }),
  aBatch: dispatchLaneOf({ accountId: 'acc_a', batchId: 'batch_1' }),
  bDefault: dispatchLaneOf({ accountId: 'acc_b' }),
  bPriority: dispatchLaneOf({ accountId: 'acc_b', serviceTier: 'priority' }),
  bFlex: dispatchLaneOf({ accountId: 'acc_b', serviceTier: 'flex' }),
};

/**
 * Two accounts, three tiers and a batch lane, model `m` (and one request of `o`). At `now`, with promotion after 60 s:
 * a1 and b1 (default, waited 90 s and 80 s) start with priority's phase; a5 waits out a backoff (not due).
 */
const scenario: Record<string, readonly (readonly [string, number, string?])[]> = {
  [lane.aPriority]: [
    ['p1', 90_000],
    ['p2', 95_000],
  ],
  [lane.bPriority]: [['q1', 91_000]],
  [lane.aDefault]: [
    ['a1', 10_000],
    ['a2', 50_000],
    ['a3', 60_000],
    ['a4', 99_000],
    ['a5', 200_000],
  ],
  [lane.bDefault]: [
    ['b1', 20_000],
    ['b2', 70_000],
    ['bx', 71_000, 'o'],
    ['b3', 80_000],
  ],
  [lane.aBatch]: [
    ['l1', 1_000],
    ['l2', 2_000],
    ['l3', 3_000],
  ],
  [lane.aFlex]: [
    ['f1', 5_000],
    ['f2', 6_000],
  ],
  [lane.bFlex]: [['g1', 7_000]],
};

const entriesOf = (lanes: Record<string, readonly (readonly [string, number, string?])[]>) =>
  new Map<string, QueuedEntry[]>(
    Object.entries(lanes).map(([name, rows]) => [
      name,
      rows.map(([reqId, availableAt, model]) => ({ reqId, availableAt, model: model ?? 'm' })),
    ]),
  );

/** The dispatch index over `entries`, counting its reads: each `queuedOf` by lane, and entries handed out. */
const readsOf = (entries: Map<string, QueuedEntry[]>) => {
  const queuedOfCalls = new Map<string, number>();
  let queuedAccountsCalls = 0;
  let entriesRead = 0;
  const reads: DispatchReads = {
    *queuedAccounts(after) {
      queuedAccountsCalls++;
      const sorted = [...entries.keys()].filter((name) => (entries.get(name)?.length ?? 0) > 0).sort();
      const from = after === undefined ? 0 : sorted.filter((name) => name <= after).length;
      for (let i = 0; i < sorted.length; i++) yield sorted[(from + i) % sorted.length] as string;
    },
    *queuedOf(name) {
      queuedOfCalls.set(name, (queuedOfCalls.get(name) ?? 0) + 1);
      for (const entry of entries.get(name) ?? []) {
        entriesRead++;
        yield entry;
      }
    },
  };
  return {
    reads,
    queuedOfCalls,
    queuedAccountsCalls: () => queuedAccountsCalls,
    entriesRead: () => entriesRead,
  };
};

const requestOf = (entries: Map<string, QueuedEntry[]>, reqId: string): QueuedRequest => {
  for (const [name, list] of entries) {
    const entry = list.find((candidate) => candidate.reqId === reqId);
    if (entry !== undefined) return { reqId, lane: name, model: entry.model, availableAt: entry.availableAt };
  }
  throw new Error(`no ${reqId}`);
};

const positionIn = (lanes: typeof scenario, reqId: string, cap?: number) => {
  const entries = entriesOf(lanes);
  const counted = readsOf(entries);
  const position = queuePositionOf(counted.reads, requestOf(entries, reqId), now, promoteAfterMs, cap);
  return { position, ...counted, entries };
};

/** The same count from per-lane tallies, as PostgreSQL reads them in SQL. */
const fromTallies = (lanes: typeof scenario, reqId: string) => {
  const entries = entriesOf(lanes);
  const request = requestOf(entries, reqId);
  const dueOfModel = (list: readonly QueuedEntry[]) =>
    list.filter((entry) => entry.model === request.model && entry.availableAt <= now);
  const tally = (list: readonly QueuedEntry[]) => ({
    due: list.length,
    promoted: list.filter((entry) => now - entry.availableAt >= promoteAfterMs).length,
  });
  const ownList = entries.get(request.lane) ?? [];
  const ahead = dueOfModel(
    ownList.slice(
      0,
      ownList.findIndex((entry) => entry.reqId === reqId),
    ),
  );
  const others = [...entries].map(([name, list]) => ({ lane: name, ...tally(dueOfModel(list)) }));
  const own = tally(ahead);
  return queuePositionFromTallies(request, { ahead: own.due, promoted: own.promoted }, others, now, promoteAfterMs);
};

const expected: Record<string, number> = {
  // Priority's phase: p1, q1, a1 and b1 are each first of their lanes.
  p1: 0,
  q1: 0,
  a1: 0,
  b1: 0,
  // The second of its lane: one of each other lane of its phase goes first.
  p2: 4,
  // Default's phase: the five of priority's first, then one round of the default lanes and the batch lane per k.
  a2: 5,
  a3: 8,
  a4: 11,
  b3: 8,
  l1: 5,
  l3: 11,
  // Not due itself: placed as if it were, after every due entry of its model ahead of it.
  a5: 13,
  // Flex's phase: everything due of priority and default first.
  f1: 13,
  f2: 15,
  g1: 13,
  // Another model: nothing of it waits ahead.
  bx: 0,
};

describe('queuePositionOf', () => {
  it('counts the due requests of the model that the claim starts before each one, in the fixed scenario', () => {
    const found = Object.fromEntries(
      Object.keys(expected).map((reqId) => [reqId, positionIn(scenario, reqId).position]),
    );
    expect(found).toEqual(expected);
  });

  it('says 0 for the request the workers start next', () => {
    expect(positionIn({ [lane.aDefault]: [['only', 1_000]] }, 'only').position).toBe(0);
    expect(positionIn(scenario, 'p1').position).toBe(0);
  });

  it('counts the same from per-lane tallies as from the lanes themselves (the PostgreSQL way)', () => {
    for (const reqId of Object.keys(expected))
      expect([reqId, fromTallies(scenario, reqId)]).toEqual([reqId, expected[reqId]]);
  });

  it('stops at 10,000, which then means at least that many, and reads no further', () => {
    const crowd: typeof scenario = {
      [dispatchLaneOf({ accountId: 'acc_c', serviceTier: 'priority' })]: Array.from(
        { length: 20_000 },
        (_, i) => [`c${i}`, 1_000 + i] as const,
      ),
      [lane.aDefault]: [['mine', 99_000]],
    };
    const counted = positionIn(crowd, 'mine');
    expect(counted.position).toBe(queuePositionCap);
    expect(counted.entriesRead()).toBeLessThanOrEqual(queuePositionCap + 1);
    const deep: typeof scenario = {
      [lane.aDefault]: [...Array.from({ length: 12_000 }, (_, i) => [`d${i}`, 1_000 + i] as const), ['last', 90_000]],
    };
    expect(positionIn(deep, 'last').position).toBe(queuePositionCap);
    expect(positionIn(deep, 'd9999').position).toBe(9_999);
  });

  it('reads each lane at most once, lists the lanes once, and reads no more lanes than have work', () => {
    for (const reqId of Object.keys(expected)) {
      const counted = positionIn(scenario, reqId);
      expect(counted.queuedAccountsCalls()).toBeLessThanOrEqual(1);
      for (const [name, calls] of counted.queuedOfCalls) expect([reqId, name, calls]).toEqual([reqId, name, 1]);
      expect(counted.queuedOfCalls.size).toBeLessThanOrEqual(counted.entries.size);
    }
    // A priority request reads neither flex lanes nor the batch lane (their work starts after it whatever they hold).
    const p1 = positionIn(scenario, 'p1');
    expect([...p1.queuedOfCalls.keys()].sort()).toEqual(
      [lane.aPriority, lane.bPriority, lane.aDefault, lane.bDefault].sort(),
    );
    // Each other lane is read only as far as it can count: one entry of each default lane (its first promoted one).
    expect(p1.entriesRead()).toBeLessThanOrEqual(1 + 1 + 1 + 1);
  });

  it('is undefined for a request no longer in its lane', () => {
    const entries = entriesOf(scenario);
    const gone = { reqId: 'gone', lane: lane.aDefault, model: 'm', availableAt: 1 };
    expect(queuePositionOf(readsOf(entries).reads, gone, now, promoteAfterMs)).toBeUndefined();
  });

  it('never says more than the claim starts first, and at most one per other lane of its phase fewer', () => {
    // One model only (another model's entry takes a lane's turn without counting), every entry due.
    const lanes: typeof scenario = Object.fromEntries(
      Object.entries(scenario).map(([name, rows]) => [
        name,
        rows.filter(([, at, model]) => model === undefined && at <= now),
      ]),
    );
    const entries = entriesOf(lanes);
    // The claim's own order: one request at a time, as workers come free, each claim after the lane served last.
    const order: string[] = [];
    const running = new Set<string>();
    let lastAccount: string | undefined;
    for (;;) {
      const claim = claimFairly(
        readsOf(entries).reads,
        { lastAccount, running, runningOf: () => 0 },
        { free: 1, modelLimit: () => Number.POSITIVE_INFINITY, promoteAfterMs },
        now,
      );
      const [taken] = claim.claimed;
      if (taken === undefined) break;
      order.push(taken.reqId);
      running.add(taken.reqId);
      lastAccount = claim.lastAccount;
    }
    expect(order).toHaveLength([...entries.values()].flat().length);
    // Lanes that share a phase: priority and promoted default (4), default and batch (3), flex (2).
    const lanesOfPhase = (reqId: string) => (reqId.startsWith('f') || reqId.startsWith('g') ? 2 : 4);
    for (const [index, reqId] of order.entries()) {
      const position = queuePositionOf(readsOf(entries).reads, requestOf(entries, reqId), now, promoteAfterMs);
      expect(position, reqId).toBeLessThanOrEqual(index);
      expect(index - (position ?? 0), reqId).toBeLessThan(lanesOfPhase(reqId));
    }
  });
});
