import { describe, expect, it } from 'vitest';
import {
  afterFailure,
  afterSuccess,
  firstCoolDownMs,
  longestCoolDownMs,
  stateAt,
  type UpstreamHealth,
} from '../../src/domain/upstreamHealth.js';

const fail = (health: UpstreamHealth | undefined, now: number, retryAfterMs?: number) =>
  afterFailure(health, { reason: 'connection refused', now, threshold: 3, retryAfterMs });

describe("An upstream's health", () => {
  it('stays in service for failures fewer than upstreamFailures, and goes out for 10 s at the third in a row', () => {
    const one = fail(undefined, 1_000);
    const two = fail(one.health, 1_100);
    expect([one.change, two.change]).toEqual([undefined, undefined]);
    expect(stateAt(two.health, 1_100)).toBe('in_service');
    const three = fail(two.health, 1_200);
    expect(three.change).toEqual({ kind: 'out', until: 1_200 + firstCoolDownMs, reason: 'connection refused' });
    expect(stateAt(three.health, 1_200 + firstCoolDownMs - 1)).toBe('out_of_service');
    expect(stateAt(three.health, 1_200 + firstCoolDownMs)).toBe('trying');
  });
  it('counts failures in a row only: a success between them starts the count again', () => {
    const two = fail(fail(undefined, 1).health, 2);
    const reset = afterSuccess(two.health);
    expect(reset).toEqual({ health: { failures: 0 } });
    expect(fail(reset.health, 3).change).toBeUndefined();
  });
  it('doubles the cool-down at each failed trial, up to 5 minutes, and a successful trial brings it back once', () => {
    let health = fail(fail(fail(undefined, 0).health, 0).health, 0).health;
    const coolDowns: number[] = [];
    for (let i = 0; i < 8; i++) {
      const trialAt = health.outUntil as number;
      expect(stateAt(health, trialAt)).toBe('trying');
      const step = fail(health, trialAt);
      expect(step.change?.kind).toBe('out');
      health = step.health;
      coolDowns.push(health.coolDownMs as number);
    }
    expect(coolDowns).toEqual([20_000, 40_000, 80_000, 160_000, longestCoolDownMs, 300_000, 300_000, 300_000]);
    const back = afterSuccess(health);
    expect(back).toEqual({ health: { failures: 0 }, change: { kind: 'back' } });
    expect(afterSuccess(back.health).change).toBeUndefined();
  });
  it('takes it out at once for as long as a 429 says in Retry-After, whatever the count', () => {
    const step = fail(undefined, 5_000, 30_000);
    expect(step.change).toEqual({ kind: 'out', until: 35_000, reason: 'connection refused' });
    // Bounded: one header cannot take it out for days.
    expect(fail(undefined, 0, 10 * 24 * 3_600_000).change).toMatchObject({ until: 3_600_000 });
  });
  it('logs nothing more for a failure of a call sent before it went out', () => {
    const out = fail(fail(fail(undefined, 0).health, 0).health, 0).health;
    const late = fail(out, 10);
    expect(late.change).toBeUndefined();
    expect(late.health.outUntil).toBe(out.outUntil);
  });
});
