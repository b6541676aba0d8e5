import { describe, expect, it } from 'vitest';
import { allowsModel, changeLimits, effectiveLimits, sameLimits } from '../../src/domain/account/limits.js';
import { defaultPlans, maxProcessingByPlan } from '../../src/domain/plans.js';

describe("an account's own limits over its plan's", () => {
  it('sets a key, removes it with null, leaves absent keys as they are, and ends with none left as undefined', () => {
    const first = changeLimits(undefined, { submitsPerMinute: 5, allowedModels: ['echo'] });
    expect(first).toEqual({ submitsPerMinute: 5, allowedModels: ['echo'] });
    const second = changeLimits(first, { allowedModels: null, maxQueued: 9 });
    expect(second).toEqual({ submitsPerMinute: 5, maxQueued: 9 });
    expect(changeLimits(second, { submitsPerMinute: null, maxQueued: null })).toBeUndefined();
    expect(sameLimits({ a: 1, b: 2 } as never, { b: 2, a: 1 } as never)).toBe(true);
  });

  it("overrides the plan's limits key by key and names the overridden ones", () => {
    const limits = effectiveLimits(defaultPlans, { plan: 'starter', limits: { maxKeys: 9, tokensPerDay: 100 } });
    expect(limits).toMatchObject({ ...defaultPlans.starter, maxKeys: 9, tokensPerDay: 100 });
    expect([...limits.own].sort()).toEqual(['maxKeys', 'tokensPerDay']);
    expect(limits.allowedModels).toBeUndefined();
  });

  it('holds an account on a plan the config no longer defines to the free plan, in the claim too', () => {
    expect(effectiveLimits(defaultPlans, { plan: 'gone' })).toEqual({ ...defaultPlans.free, own: [] });
    // Not inherited from Object.prototype either.
    expect(effectiveLimits(defaultPlans, { plan: 'constructor' })).toEqual({ ...defaultPlans.free, own: [] });
    expect(maxProcessingByPlan(defaultPlans)).toEqual({ free: 4, starter: 16, scale: 64, enterprise: null });
  });

  it('allows every model without allowedModels, and only those listed with it', () => {
    expect(allowsModel(undefined, 'echo')).toBe(true);
    expect(allowsModel({}, 'echo')).toBe(true);
    expect(allowsModel({ allowedModels: ['echo'] }, 'echo-slow')).toBe(false);
    expect(allowsModel({ allowedModels: [] }, 'echo')).toBe(false);
  });
});
