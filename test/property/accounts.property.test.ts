import { Effect, Result } from 'effect';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BuiltInPlanName, defaultPlans, planNames } from '../../src/domain/plans.js';
import { startTestApp, type TestApp } from '../support/testApp.js';

/** What a simple model says about one account: its plan, whether it is suspended, and its keys. */
type Model = { plan: BuiltInPlanName; suspended: boolean; keys: { id: string; key: string; revoked: boolean }[] };
type Real = { app: TestApp; accountId: string };

const activeKeys = (m: Model) => m.keys.filter((k) => !k.revoked).length;

class CreateKey implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real) {
    const limit = defaultPlans[m.plan].maxKeys;
    const allowed = !m.suspended && (limit === null || activeKeys(m) < limit);
    const result = await Effect.runPromise(Effect.result(r.app.accounts.createKey(r.accountId)));
    expect(Result.isSuccess(result)).toBe(allowed);
    if (Result.isSuccess(result)) m.keys.push({ id: result.success.id, key: result.success.key, revoked: false });
  }
  toString = () => 'CreateKey';
}
class RevokeKey implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.keys.length > 0;
  async run(m: Model, r: Real) {
    const key = m.keys[this.pick % m.keys.length] as Model['keys'][number];
    await Effect.runPromise(r.app.accounts.revokeKey(key.id));
    key.revoked = true;
  }
  toString = () => `RevokeKey(${this.pick})`;
}
class SetSuspended implements fc.AsyncCommand<Model, Real> {
  constructor(readonly suspended: boolean) {}
  check = () => true;
  async run(m: Model, r: Real) {
    await Effect.runPromise(this.suspended ? r.app.accounts.suspend(r.accountId) : r.app.accounts.resume(r.accountId));
    m.suspended = this.suspended;
  }
  toString = () => (this.suspended ? 'Suspend' : 'Resume');
}
class ChangePlan implements fc.AsyncCommand<Model, Real> {
  constructor(readonly plan: BuiltInPlanName) {}
  check = () => true;
  async run(m: Model, r: Real) {
    await Effect.runPromise(r.app.accounts.changePlan(r.accountId, this.plan));
    m.plan = this.plan;
  }
  toString = () => `ChangePlan(${this.plan})`;
}
const calls: Record<number, number> = {};
class Call implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.keys.length > 0;
  async run(m: Model, r: Real) {
    const key = m.keys[this.pick % m.keys.length] as Model['keys'][number];
    const response = await r.app.call('POST', '/v1/ai', { key: key.key, body: { model: 'echo', prompt: 'hi' } });
    const expected = key.revoked ? 401 : m.suspended ? 403 : 202;
    calls[expected] = (calls[expected] ?? 0) + 1;
    expect(response.status).toBe(expected);
    if (expected !== 202) {
      const body = (await response.json()) as { error: { code: string } };
      expect(body.error.code).toBe(expected === 401 ? 'unauthorized' : 'forbidden');
    }
  }
  toString = () => `Call(${this.pick})`;
}

const commands = [
  fc.constant(new CreateKey()),
  fc.nat().map((n) => new RevokeKey(n)),
  fc.boolean().map((s) => new SetSuspended(s)),
  fc.constantFrom(...planNames).map((p) => new ChangePlan(p)),
  fc.nat().map((n) => new Call(n)),
];

describe('Accounts, keys and plans against a model of who may do what', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({
      config: {
        plans: {
          ...defaultPlans,
          free: { ...defaultPlans.free, submitsPerMinute: 100_000 },
          starter: { ...defaultPlans.starter, submitsPerMinute: 100_000 },
          scale: { ...defaultPlans.scale, submitsPerMinute: 100_000 },
        },
      },
    });
  });
  afterAll(() => app.stop());

  it('keys beyond the plan are refused, revoked keys get 401 at once, a suspended account gets 403 and no new key, everything else is served', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 30, size: 'large' }), async (cmds) => {
        const account = await Effect.runPromise(
          app.accounts.createAccount(`model${++n}-${Date.now()}@example.com`, 'free'),
        );
        await fc.asyncModelRun(
          (): { model: Model; real: Real } => ({
            model: { plan: 'free', suspended: false, keys: [] },
            real: { app, accountId: account.accountId },
          }),
          cmds,
        );
      }),
      { numRuns: 40 },
    );
    // The runs must have reached every outcome, or the property said little.
    expect(Object.keys(calls).sort()).toEqual(['202', '401', '403']);
  });
});
