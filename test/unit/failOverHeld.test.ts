import { describe, expect, it } from 'vitest';
import { decideFailOver, type FailOver } from '../../src/domain/failOver.js';
import { upstreamCounter } from '../../src/domain/processingCounters.js';
import { foldRequest } from '../../src/domain/request/state.js';
import type { UpstreamHealth } from '../../src/domain/upstreamHealth.js';

/** One request of `llama`, in its first attempt on upstream `a`, held by `proc_a`; `b` has `inB` calls of its 1 place. */
const readsWith = (inB: number) => {
  const state = foldRequest([
    {
      type: 'RequestQueued',
      reqId: 'req_1',
      accountId: 'acct_a',
      keyId: 'key_a',
      model: 'llama',
      promptChars: 1,
      at: 0,
      expiresAt: 1_000_000,
      maxAttempts: 1,
    },
    {
      type: 'RequestProcessingStarted',
      reqId: 'req_1',
      attempt: 1,
      at: 1,
      owner: 'proc_a',
      leaseUntil: 60_000,
      upstream: 'a',
    },
  ]);
  return {
    request: () => state,
    processingCount: (counter: string) => (counter === upstreamCounter('llama', 'b') ? inB : 0),
  };
};
const failOver = (more: Partial<FailOver> = {}): FailOver => ({
  type: 'FailOver',
  reqId: 'req_1',
  owner: 'proc_a',
  attempt: 1,
  now: 100,
  model: 'llama',
  from: 'a',
  tried: ['a'],
  upstreams: [
    { name: 'a', places: 1 },
    { name: 'b', places: 1 },
  ],
  reason: 'connection refused',
  policy: { maxAttempts: 1, baseDelayMs: 1_000, maxDelayMs: 60_000 },
  ...more,
});
const typesOf = (decision: ReturnType<typeof decideFailOver>) =>
  'events' in decision ? decision.events.map((event) => event.type) : decision;
const out: UpstreamHealth = { failures: 3, outUntil: 10_000, coolDownMs: 10_000 };

describe('Failover with no upstream to move to', () => {
  it('gives the attempt back unspent while another upstream in service has no free place', () => {
    expect(typesOf(decideFailOver(readsWith(1), failOver()))).toEqual(['RequestReleased']);
  });
  it('moves the attempt to the other upstream when it has a free place', () => {
    expect(typesOf(decideFailOver(readsWith(0), failOver()))).toEqual(['RequestUpstreamChanged']);
  });
  it('records the failure when the other upstream is out of service in the holder’s view, and holds it when asked to', () => {
    const health = { llama: { b: out } };
    expect(typesOf(decideFailOver(readsWith(0), failOver({ health })))).toEqual(['RequestFailed']);
    expect(typesOf(decideFailOver(readsWith(0), failOver({ health, hold: true })))).toEqual(['RequestReleased']);
  });
});
