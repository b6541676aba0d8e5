import { describe, expect, it } from 'vitest';
import { decideGcra, peekGcra } from '../../src/domain/rateLimit/gcra.js';

const budget = { limit: 60, windowMs: 60_000 };

describe('The GCRA limiter', () => {
  it('grants a whole minute’s budget at once to a caller with nothing spent, and refuses the next call', () => {
    let tat: number | undefined;
    const now = 1_000_000;
    for (let i = 0; i < 60; i++) {
      const decision = decideGcra(budget, tat, now);
      expect(decision.allowed).toBe(true);
      expect(decision.remaining).toBe(59 - i);
      tat = decision.tat;
    }
    const refused = decideGcra(budget, tat, now);
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterMs).toBe(1_000);
  });
  it('refills one call per limit/60 seconds after a burst', () => {
    let tat: number | undefined;
    const now = 1_000_000;
    for (let i = 0; i < 60; i++) tat = decideGcra(budget, tat, now).tat;
    expect(decideGcra(budget, tat, now + 999).allowed).toBe(false);
    const granted = decideGcra(budget, tat, now + 1_000);
    expect(granted.allowed).toBe(true);
    expect(granted.remaining).toBe(0);
  });
  it('reports the first call of a fresh budget as the contract’s example: 59 left, whole again in 1 s', () => {
    const decision = decideGcra(budget, undefined, 5_000);
    expect(decision.remaining).toBe(59);
    expect(Math.ceil(decision.resetMs / 1000)).toBe(1);
  });
  it('a refusal leaves the state unchanged, so refused calls do not push the next grant further away', () => {
    let tat: number | undefined;
    for (let i = 0; i < 60; i++) tat = decideGcra(budget, tat, 0).tat;
    const refused = decideGcra(budget, tat, 10);
    expect(refused.tat).toBe(tat);
  });
});

describe('Peeking at a budget', () => {
  it('tells what is left now without spending any of it', () => {
    expect(peekGcra(budget, undefined, 1_000)).toEqual({ remaining: 60, resetMs: 0 });
    const spent = decideGcra(budget, undefined, 1_000);
    expect(peekGcra(budget, spent.tat, 1_000)).toEqual({ remaining: 59, resetMs: 1_000 });
    expect(peekGcra(budget, spent.tat, 1_000)).toEqual(peekGcra(budget, spent.tat, 1_000));
    expect(peekGcra(budget, spent.tat, 2_000)).toEqual({ remaining: 60, resetMs: 0 });
  });
});
