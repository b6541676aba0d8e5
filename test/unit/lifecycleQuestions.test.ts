import { describe, expect, it } from 'vitest';
import { decideBatch } from '../../src/domain/batch/decider.js';
import {
  type BatchState,
  evolveBatch,
  initialBatchState,
  mayCloseWindow,
  noCounts,
} from '../../src/domain/batch/state.js';
import { Refused } from '../../src/domain/errors.js';
import type { RequestEvent } from '../../src/domain/request/events.js';
import { requestMachine } from '../../src/domain/request/machine.js';
import { isCancellable, isExpired } from '../../src/domain/request/questions.js';
import { canApply, foldRequest, initialRequestState } from '../../src/domain/request/state.js';

/** The questions asked of the machines outside them (expired? cancellable? may it be taken over?), at their edges. */

const reqId = 'req_questions';
const t0 = 1_000_000;
const expiresAt = t0 + 86_400_000;
const queued: RequestEvent = {
  type: 'RequestQueued',
  reqId,
  accountId: 'acct_a',
  keyId: 'key_a',
  model: 'echo',
  promptChars: 5,
  at: t0,
  expiresAt,
};
const startedBy = (owner: string | undefined, attempt = 1, at = t0 + 10): RequestEvent => ({
  type: 'RequestProcessingStarted',
  reqId,
  attempt,
  at,
  ...(owner === undefined ? {} : { owner, leaseUntil: at + 30_000 }),
});

const waiting = foldRequest([queued]);
const processing = foldRequest([queued, startedBy('proc_a')]);
const completed = foldRequest([
  queued,
  startedBy(undefined),
  { type: 'RequestCompleted', reqId, responseChars: 5, at: t0 + 20 },
]);
const failed = foldRequest([
  queued,
  startedBy(undefined),
  { type: 'RequestFailed', reqId, reason: 'boom', at: t0 + 20 },
]);
const cancelled = foldRequest([queued, { type: 'RequestCancelled', reqId, at: t0 + 20 }]);
const expired = foldRequest([queued, { type: 'RequestExpired', reqId, at: expiresAt }]);

describe('Whether a request is expired', () => {
  it('is no until the millisecond before its expiry time, and yes from that millisecond on, whatever its status, before the sweeper writes it', () => {
    for (const state of [waiting, processing, completed, failed, cancelled]) {
      expect(isExpired(state, expiresAt - 1)).toBe(false);
      expect(isExpired(state, expiresAt)).toBe(true);
      expect(isExpired(state, expiresAt + 1)).toBe(true);
    }
  });

  it('is yes once the log says so, and no for a request that does not exist', () => {
    expect(isExpired(expired, expiresAt)).toBe(true);
    expect(isExpired(initialRequestState, expiresAt)).toBe(false);
  });
});

describe('Whether a request may be cancelled', () => {
  it('is yes while it waits or is being processed, until the millisecond before its expiry time', () => {
    for (const state of [waiting, processing]) {
      expect(isCancellable(state, t0 + 30)).toBe(true);
      expect(isCancellable(state, expiresAt - 1)).toBe(true);
      expect(isCancellable(state, expiresAt)).toBe(false);
    }
  });

  it('is no once it has completed, failed, been cancelled or expired, and for a request that does not exist', () => {
    for (const state of [completed, failed, cancelled, expired, initialRequestState])
      expect(isCancellable(state, t0 + 30)).toBe(false);
  });
});

describe('Whether a request being processed may be taken over', () => {
  const lapsed = t0 + 10 + 30_000;

  it('another process may once the lease lapsed, as a new attempt, and not a millisecond before', () => {
    expect(canApply(processing, startedBy('proc_b', 2, lapsed - 1))).toBe(false);
    expect(canApply(processing, startedBy('proc_b', 2, lapsed))).toBe(true);
  });

  it('the process that holds the lease never takes it over itself, lapsed or not', () => {
    expect(canApply(processing, startedBy('proc_a', 2, lapsed))).toBe(false);
    expect(canApply(processing, startedBy('proc_a', 2, lapsed + 60_000))).toBe(false);
  });

  it('a start written by an older version (no owner) takes over any lapsed lease, as it always did', () => {
    expect(canApply(processing, startedBy(undefined, 2, lapsed))).toBe(true);
    expect(canApply(foldRequest([queued, startedBy(undefined)]), startedBy('proc_a', 2, t0 + 20))).toBe(true);
  });

  it('nobody takes it over from its expiry time on', () => {
    expect(canApply(processing, startedBy('proc_b', 2, expiresAt))).toBe(false);
  });
});

describe('How a request comes to be processed', () => {
  it('by the start of a due request that waits, or by the takeover of a lapsed lease: nothing else re-enters processing', () => {
    type Node = {
      readonly id: string;
      readonly states: Record<string, Node>;
      readonly transitions: Map<string, readonly { guard?: unknown; target?: readonly { id: string }[] }[]>;
    };
    const into: { from: string; event: string; guard: unknown }[] = [];
    const walk = (node: Node) => {
      for (const [event, transitions] of node.transitions)
        for (const { guard, target } of transitions)
          if (target?.some(({ id }) => id === 'request.queued.processing')) into.push({ from: node.id, event, guard });
      for (const child of Object.values(node.states)) walk(child);
    };
    walk(requestMachine.root as unknown as Node);
    expect(into).toEqual([
      { from: 'request.queued.waiting', event: 'RequestProcessingStarted', guard: 'dueInTime' },
      { from: 'request.queued.processing', event: 'RequestProcessingStarted', guard: 'lapsedForAnotherInTime' },
    ]);
  });
});

describe("Whether a batch's window may be closed", () => {
  const batchId = 'batch_0190f2a0b1c2AbCdEfGhIjKlMnOpQrStUv';
  const at = 1_000_000;
  const windowMs = 86_400_000;
  const step = (state: BatchState, command: Parameters<typeof decideBatch>[3]) => {
    const events = decideBatch(batchId, state, noCounts, command);
    if (events instanceof Refused) throw events;
    return events.reduce<BatchState>((s, e) => evolveBatch(s, e), state);
  };
  const validating = step(initialBatchState, {
    type: 'CreateBatch',
    accountId: 'acct_aaaaaaaaaaaaaaaa',
    keyId: 'key_aaaaaaaaaaaaaaaa',
    endpoint: '/v1/chat/completions',
    inputFileId: 'file-0190f2a0b1c2AbCdEfGhIjKlMnOpQrStUv',
    completionWindow: '24h',
    windowMs,
    now: at,
  });
  const taken = step(validating, { type: 'TakeBatch', owner: 'p1', leaseMs: 30_000, now: at + 1 });
  const inProgress = step(taken, { type: 'StartBatch', owner: 'p1', total: 3, model: 'echo', now: at + 2 });

  it('is yes for a batch in progress from its expiry time on, and not a millisecond before', () => {
    expect(mayCloseWindow(inProgress, at + windowMs - 1)).toBe(false);
    expect(mayCloseWindow(inProgress, at + windowMs)).toBe(true);
  });

  it('is no for a batch not in progress, past its window or not', () => {
    expect(mayCloseWindow(validating, at + windowMs)).toBe(false);
    const cancelling = step(inProgress, { type: 'CancelBatch', accountId: 'acct_aaaaaaaaaaaaaaaa', now: at + 3 });
    expect(mayCloseWindow(cancelling, at + windowMs)).toBe(false);
  });
});
