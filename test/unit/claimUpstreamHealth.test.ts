import { describe, expect, it } from 'vitest';
import { type ClaimReads, decideClaim } from '../../src/domain/claim.js';
import type { RequestProcessingStarted } from '../../src/domain/request/events.js';
import { foldRequest } from '../../src/domain/request/state.js';
import type { UpstreamHealth } from '../../src/domain/upstreamHealth.js';

const now = 100_000;
const queued = Array.from({ length: 6 }, (_, i) => `req_${i}`);
/** Six requests of `llama` due, one account, nothing in flight; each upstream's health as given. */
const readsWith = (health: Record<string, UpstreamHealth>): ClaimReads => {
  const states = new Map(
    queued.map((reqId, i) => [
      reqId,
      foldRequest([
        {
          type: 'RequestQueued',
          reqId,
          accountId: 'acct_a',
          keyId: 'key_a',
          model: 'llama',
          promptChars: 1,
          at: i,
          expiresAt: 10 * now,
          maxAttempts: 3,
        },
      ]),
    ]),
  );
  return {
    queuedAccounts: () => ['acct_a'],
    queuedOf: () => queued.map((reqId, i) => ({ reqId, availableAt: i, model: 'llama' })),
    request: (reqId) => states.get(reqId),
    processingCount: () => 0,
    account: () => undefined,
    lapsedLeases: () => [],
    upstreamHealth: (_model, upstream) => health[upstream],
  };
};
const claimWith = (
  health: Record<string, UpstreamHealth>,
  more: { fallbacks?: Record<string, { models: string[] }> } = {},
) =>
  decideClaim(readsWith(health), {
    ...more,
    type: 'Claim',
    owner: 'proc_a',
    now,
    leaseMs: 30_000,
    max: 10,
    modelLimits: {},
    policy: { maxAttempts: 3, baseDelayMs: 1_000, maxDelayMs: 60_000 },
    upstreams: {
      llama: [
        { name: 'a', places: 2 },
        { name: 'b', places: 2 },
      ],
    },
  }).flatMap((decision) => decision.events as RequestProcessingStarted[]);

const out = (until: number): UpstreamHealth => ({ failures: 3, outUntil: until, coolDownMs: 10_000 });

describe("The claim and its model's upstreams' health", () => {
  it('sends no call to an upstream out of service: the work goes to the others', () => {
    const started = claimWith({ a: out(now + 5_000) });
    expect(started.map((event) => event.upstream)).toEqual(['b', 'b']);
  });
  it('holds the work of a model with no upstream in service: nothing starts, no attempt is spent', () => {
    expect(claimWith({ a: out(now + 1), b: out(now + 60_000) })).toEqual([]);
  });
  it('gives an upstream whose cool-down is over one call, its trial', () => {
    const started = claimWith({ a: out(now - 1), b: out(now + 60_000) });
    expect(started.map((event) => event.upstream)).toEqual(['a']);
  });
  it('starts the work of a model with no upstream in service on its first fallback, named as the model that serves', () => {
    const started = claimWith(
      { a: out(now + 1), b: out(now + 60_000) },
      { fallbacks: { llama: { models: ['hosted'] } } },
    );
    expect(started.map((event) => event.servedBy)).toEqual(Array(6).fill('hosted'));
    // While one upstream is in service, nothing goes to the fallback.
    const own = claimWith({ a: out(now + 1) }, { fallbacks: { llama: { models: ['hosted'] } } });
    expect(own.map((event) => [event.upstream, event.servedBy])).toEqual([
      ['b', undefined],
      ['b', undefined],
    ]);
  });
});

/** The same six requests, their model of one upstream (not placed), health carried by the claim from the process's book. */
const claimSingle = (
  health: Record<string, Record<string, UpstreamHealth>> | undefined,
  more: { fallbacks?: Record<string, { models: string[] }>; inFlight?: number } = {},
) => {
  const reads = readsWith({});
  return decideClaim(
    {
      ...reads,
      upstreamHealth: undefined,
      processingCount: (counter) => (counter.includes('llama') ? (more.inFlight ?? 0) : 0),
    },
    {
      ...(more.fallbacks === undefined ? {} : { fallbacks: more.fallbacks }),
      type: 'Claim',
      owner: 'proc_a',
      now,
      leaseMs: 30_000,
      max: 10,
      modelLimits: {},
      policy: { maxAttempts: 3, baseDelayMs: 1_000, maxDelayMs: 60_000 },
      health,
    },
  ).flatMap((decision) => decision.events as RequestProcessingStarted[]);
};

describe("The claim and the process's health view", () => {
  it("reads the view the claim carries before the store's: an upstream out of service in it takes no call", () => {
    const started = decideClaim(readsWith({}), {
      type: 'Claim',
      owner: 'proc_a',
      now,
      leaseMs: 30_000,
      max: 10,
      modelLimits: {},
      policy: { maxAttempts: 3, baseDelayMs: 1_000, maxDelayMs: 60_000 },
      upstreams: {
        llama: [
          { name: 'a', places: 2 },
          { name: 'b', places: 2 },
        ],
      },
      health: { llama: { a: out(now + 5_000) } },
    }).flatMap((decision) => decision.events as RequestProcessingStarted[]);
    expect(started.map((event) => event.upstream)).toEqual(['b', 'b']);
  });
  it('starts no work of a model of one upstream while that upstream is out of service', () => {
    expect(claimSingle({ llama: { '0': out(now + 5_000) } })).toEqual([]);
    // In service (nothing in the view): all six start, named on no upstream as before.
    const started = claimSingle(undefined);
    expect(started).toHaveLength(6);
    expect(started.every((event) => event.upstream === undefined)).toBe(true);
  });
  it('gives a model of one upstream one trial call once its cool-down is over, and none while a call of it is in flight', () => {
    expect(claimSingle({ llama: { '0': out(now - 1) } })).toHaveLength(1);
    expect(claimSingle({ llama: { '0': out(now - 1) } }, { inFlight: 1 })).toEqual([]);
  });
  it('starts the work of a model of one upstream out of service on its first fallback', () => {
    const started = claimSingle({ llama: { '0': out(now + 5_000) } }, { fallbacks: { llama: { models: ['hosted'] } } });
    expect(started.map((event) => event.servedBy)).toEqual(Array(6).fill('hosted'));
    expect(claimSingle(undefined, { fallbacks: { llama: { models: ['hosted'] } } }).some((e) => e.servedBy)).toBe(
      false,
    );
  });
});

describe('A lapsed lease of a model of one upstream', () => {
  it('is taken over as the trial call once the cool-down is over (it counts in flight itself)', () => {
    const lapsed = foldRequest([
      {
        type: 'RequestQueued',
        reqId: 'req_lapsed',
        accountId: 'acct_a',
        keyId: 'key_a',
        model: 'llama',
        promptChars: 1,
        at: 0,
        expiresAt: 10 * now,
        maxAttempts: 3,
      },
      { type: 'RequestProcessingStarted', reqId: 'req_lapsed', attempt: 1, at: 1, owner: 'proc_b', leaseUntil: 2 },
    ]);
    const claimAt = (health: UpstreamHealth) =>
      decideClaim(
        {
          queuedAccounts: () => [],
          queuedOf: () => [],
          request: () => lapsed,
          processingCount: (counter) => (counter.includes('llama') ? 1 : 0),
          account: () => undefined,
          lapsedLeases: () => ['req_lapsed'],
        },
        {
          type: 'Claim',
          owner: 'proc_a',
          now,
          leaseMs: 30_000,
          max: 10,
          modelLimits: {},
          policy: { maxAttempts: 3, baseDelayMs: 1_000, maxDelayMs: 60_000 },
          health: { llama: { '0': health } },
        },
      ).flatMap((decision) => decision.events.map((event) => event.type));
    expect(claimAt(out(now - 1))).toEqual(['RequestProcessingStarted']);
    expect(claimAt(out(now + 5_000))).toEqual([]);
  });
});
