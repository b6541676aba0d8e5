import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as Effect from 'effect/Effect';
import * as Result from 'effect/Result';
import { afterEach, describe, expect, it } from 'vitest';
import { overviewPage } from '../../src/adapters/http/dashboard/views/pages.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { effectiveLimits } from '../../src/domain/account/limits.js';
import { defaultPlans } from '../../src/domain/plans.js';
import type { ManualClock } from '../../src/ports/Clock.js';
import { startTestApp, type TestApp } from '../support/testApp.js';

const apps: TestApp[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.stop();
});
const start = async (options: Parameters<typeof startTestApp>[0] = {}) => {
  const app = await startTestApp(options);
  apps.push(app);
  return app;
};

const dir = mkdtempSync(join(tmpdir(), 'airs-plans-'));
const configWith = (plans: unknown) => {
  const path = join(dir, `c${Math.random()}.json`);
  writeFileSync(path, JSON.stringify({ plans }));
  return () => loadConfig({ AIRS_CONFIG: path }, dir);
};

describe('plans of any name in the config file', () => {
  it('adds a plan of its own name, starting from the free plan, beside the four built-in ones with their defaults', () => {
    const { plans } = configWith({ gold: { submitsPerMinute: 900, tokensPerDay: 5_000 }, free: { maxQueued: 7 } })();
    expect(Object.keys(plans)).toEqual(['free', 'starter', 'scale', 'enterprise', 'gold']);
    expect(plans.gold).toEqual({ ...defaultPlans.free, maxQueued: 7, submitsPerMinute: 900, tokensPerDay: 5_000 });
    expect(plans.scale).toEqual(defaultPlans.scale);
    expect(defaultPlans.enterprise).toMatchObject({ tokensPerMinute: null, tokensPerDay: null, tokensPerMonth: null });
  });

  it('refuses a plan name outside [a-z0-9-]{1,40} and a limit it does not know', () => {
    expect(configWith({ Gold: {} })).toThrow(ConfigError);
    expect(configWith({ ['g'.repeat(41)]: {} })).toThrow(/plan name/);
    expect(configWith({ gold: { submitsPerHour: 3 } })).toThrow(ConfigError);
  });
});

describe("an account's own limits and its keys' expiry, in process", () => {
  it('answers a key 401 from the instant of its expiry, though authentication cached it a moment before', async () => {
    const app = await start();
    const clock = app.clock as ManualClock;
    const account = await Effect.runPromise(app.accounts.createAccount('ends@example.org', 'scale'));
    const key = await Effect.runPromise(app.accounts.createKey(account.accountId, 'ci', clock.now() + 2_000));
    expect(key.expiresAt).toBe(clock.now() + 2_000);
    expect((await app.call('GET', '/v1/models', { key: key.key })).status).toBe(200);
    clock.advance(1_999);
    expect((await app.call('GET', '/v1/models', { key: key.key })).status).toBe(200);
    clock.advance(1);
    const expired = await app.call('GET', '/v1/models', { key: key.key });
    expect(expired.status).toBe(401);
    expect(await expired.json()).toMatchObject({ error: { message: 'this API key has expired' } });
    const past = await Effect.runPromise(
      Effect.result(app.accounts.createKey(account.accountId, undefined, clock.now())),
    );
    expect(Result.isFailure(past)).toBe(true);
  });

  it("refuses a key over the account's own maxKeys, and a plan the config does not define", async () => {
    const app = await start();
    const account = await Effect.runPromise(app.accounts.createAccount('keys@example.org', 'scale'));
    await Effect.runPromise(app.accounts.setLimits(account.accountId, { maxKeys: 1 }));
    await Effect.runPromise(app.accounts.createKey(account.accountId));
    const second = await Effect.runPromise(Effect.result(app.accounts.createKey(account.accountId)));
    expect(Result.isFailure(second) && second.failure.message).toMatch(/own limits allow 1 active API key/);
    const noPlan = await Effect.runPromise(Effect.result(app.accounts.createAccount('x@example.org', 'platinum')));
    expect(Result.isFailure(noPlan) && noPlan.failure.message).toMatch(/unknown plan "platinum"/);
  });

  it('holds a queue bound set for the account over its plan, from the very next submit', async () => {
    const app = await start();
    const { accountId, key } = await app.account('scale');
    const post = () => app.call('POST', '/v1/ai', { key, body: { model: 'echo-slow', prompt: 'wait' } });
    expect((await post()).status).toBe(202);
    await Effect.runPromise(app.accounts.setLimits(accountId, { maxQueued: 2 }));
    expect((await post()).status).toBe(202);
    expect((await post()).status).toBe(429);
    await Effect.runPromise(app.accounts.setLimits(accountId, { maxQueued: null }));
    expect((await post()).status).toBe(202);
  });

  it("shows the account's limits on the dashboard's overview, marking those set for it, and what it used of each token budget", () => {
    const limits = effectiveLimits(defaultPlans, {
      plan: 'starter',
      limits: { submitsPerMinute: 42, allowedModels: ['echo'], tokensPerMonth: 1_000 },
    });
    const html = overviewPage({
      csrf: 'c',
      email: 'a@example.org',
      plan: 'starter',
      plans: defaultPlans,
      limits,
      tokensUsed: { tokensPerMinute: 7, tokensPerDay: 120, tokensPerMonth: 250 },
      keysUsed: 0,
      maxKeys: limits.maxKeys,
      rate: {
        submits: { remaining: 42, limit: 42, resetSeconds: 0 },
        polls: { remaining: 6_000, limit: 6_000, resetSeconds: 0 },
      },
      requestsLast24h: 0,
      tokensByDay: [],
    });
    const row = (key: string) => html.match(new RegExp(`<tr data-limit="${key}"[\\s\\S]*?</tr>`))?.[0] ?? '';
    expect(row('submitsPerMinute')).toMatch(/42[\s\S]*set for your account/);
    expect(row('allowedModels')).toMatch(/echo[\s\S]*set for your account/);
    expect(row('pollsPerMinute')).toMatch(/6,000/);
    expect(row('pollsPerMinute')).not.toMatch(/set for your account/);
    expect(row('tokensPerDay')).toMatch(/unlimited/);
    expect(row('tokensPerDay')).not.toMatch(/ used \(/);
    expect(row('tokensPerMonth')).toMatch(/1,000[\s\S]*250 used \(25%\)[\s\S]*set for your account/);
  });
});
