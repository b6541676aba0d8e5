import { describe, expect, it } from 'vitest';
import { decide } from '../../src/domain/request/decider.js';
import type { RequestEvent } from '../../src/domain/request/events.js';
import { isPastDeadline } from '../../src/domain/request/questions.js';
import { canApply, foldRequest } from '../../src/domain/request/state.js';
import { groupOf } from '../../src/storage/projection.js';

/** A request's deadline (`Cancel-After`, contract 20) as the machine, the decider and the sweeper's index see it. */

const reqId = 'req_deadline';
const t0 = 1_000_000;
const expiresAt = t0 + 86_400_000;
const deadlineAt = t0 + 30_000;
const queued: RequestEvent = {
  type: 'RequestQueued',
  reqId,
  accountId: 'acct_a',
  keyId: 'key_a',
  model: 'echo',
  promptChars: 5,
  at: t0,
  expiresAt,
  deadlineAt,
};
const start = (at: number, attempt = 1, owner = 'proc_a'): RequestEvent => ({
  type: 'RequestProcessingStarted',
  reqId,
  attempt,
  at,
  owner,
  leaseUntil: at + 1_000,
});
const deadlineCancel = (at: number): RequestEvent => ({ type: 'RequestCancelled', reqId, at, reason: 'deadline' });

const waiting = foldRequest([queued]);
const running = foldRequest([queued, start(t0 + 10)]);

describe('A request with a deadline', () => {
  it('may be started until the millisecond before its deadline, and never from its deadline on', () => {
    expect(canApply(waiting, start(deadlineAt - 1))).toBe(true);
    expect(canApply(waiting, start(deadlineAt))).toBe(false);
  });

  it('is not taken over from its deadline on, its lease lapsed or not', () => {
    expect(canApply(running, start(deadlineAt - 1, 2, 'proc_b'))).toBe(true);
    expect(canApply(running, start(deadlineAt, 2, 'proc_b'))).toBe(false);
  });

  it('is cancelled for its deadline only from the deadline on, queued or running', () => {
    for (const state of [waiting, running]) {
      expect(canApply(state, deadlineCancel(deadlineAt - 1))).toBe(false);
      expect(isPastDeadline(state, deadlineAt - 1)).toBe(false);
      expect(canApply(state, deadlineCancel(deadlineAt))).toBe(true);
      expect(isPastDeadline(state, deadlineAt)).toBe(true);
    }
  });

  it('keeps the reason of its cancel in its view', () => {
    expect(foldRequest([queued, deadlineCancel(deadlineAt)]).context).toMatchObject({
      cancelledAt: deadlineAt,
      cancelReason: 'deadline',
    });
  });

  it('comes to the sweeper at its deadline while it has not ended, and at its expiry once it has', () => {
    expect(groupOf.expiry(waiting)).toBe(deadlineAt);
    expect(groupOf.expiry(running)).toBe(deadlineAt);
    expect(groupOf.expiry(foldRequest([queued, deadlineCancel(deadlineAt)]))).toBe(expiresAt);
    const { deadlineAt: _none, ...withoutDeadline } = queued as Extract<RequestEvent, { type: 'RequestQueued' }>;
    expect(groupOf.expiry(foldRequest([withoutDeadline]))).toBe(expiresAt);
  });

  it('is cancelled with reason deadline when its time is up before its expiry, expired after it, and left alone once cancelled', () => {
    expect(decide(waiting, { type: 'TimeUp', reqId, now: deadlineAt })).toEqual([deadlineCancel(deadlineAt)]);
    expect(decide(running, { type: 'TimeUp', reqId, now: expiresAt })).toEqual([
      { type: 'RequestExpired', reqId, at: expiresAt },
    ]);
    const cancelled = foldRequest([queued, deadlineCancel(deadlineAt)]);
    expect(decide(cancelled, { type: 'TimeUp', reqId, now: deadlineAt + 1 })).toEqual([]);
    expect(decide(cancelled, { type: 'TimeUp', reqId, now: expiresAt })).toEqual([
      { type: 'RequestExpired', reqId, at: expiresAt },
    ]);
  });

  it('records its deadline from the submit: its creation plus Cancel-After', () => {
    const events = decide(foldRequest([]), {
      type: 'Submit',
      reqId,
      accountId: 'acct_a',
      keyId: 'key_a',
      model: 'echo',
      promptChars: 5,
      ttlMs: 86_400_000,
      now: t0,
      cancelAfterMs: 30_000,
    });
    expect(events).toEqual([queued]);
  });
});
