import { afterEach, describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/config.js';
import { defaultPlans } from '../../src/domain/plans.js';
import { submit } from '../support/submit.js';
import { eventually, loggedEvents, startTestApp, type TestApp } from '../support/testApp.js';

const slow: ModelConfig = { id: 'slow', provider: 'echo', delayMs: 5, timeoutMs: 10_000 };
const generous = { ...defaultPlans, free: { ...defaultPlans.free, submitsPerMinute: 100_000, maxQueued: 100_000 } };

const completions = async (app: TestApp) =>
  (await loggedEvents(app)).filter((e) => e.type === 'RequestCompleted').map((e) => (e as { reqId: string }).reqId);

describe('Fair dispatch', () => {
  let app: TestApp;
  afterEach(() => app?.stop());

  it('serves an account’s single request before another account’s 10th, even when that one queued 200 first', async () => {
    app = await startTestApp({
      config: { models: [slow], processing: { concurrency: 1, maxAttempts: 1 }, plans: generous },
    });
    const a = await app.account();
    const b = await app.account();
    const flood = await Promise.all(
      Array.from({ length: 200 }, (_, i) => submit(app, a.key, { model: 'slow', prompt: `a${i}` })),
    );
    const single = await submit(app, b.key, { model: 'slow', prompt: 'b' });
    await eventually(async () => ((await completions(app)).includes(single) ? true : undefined), 20_000);
    const done = await completions(app);
    const floodBeforeSingle = done.slice(0, done.indexOf(single)).filter((id) => flood.includes(id)).length;
    expect(floodBeforeSingle).toBeLessThan(10);
  });

  it('takes accounts in turn: three accounts with five requests each are served round robin', async () => {
    // The one worker is held by a long request of a fourth account while the fifteen are queued, however slowly the
    // machine runs the submits.
    const blocker: ModelConfig = { id: 'blocker', provider: 'echo', delayMs: 1_500, timeoutMs: 10_000 };
    app = await startTestApp({
      config: { models: [slow, blocker], processing: { concurrency: 1, maxAttempts: 1 }, plans: generous },
    });
    const first = await submit(app, (await app.account()).key, { model: 'blocker', prompt: 'holds the worker' });
    const accounts = [await app.account(), await app.account(), await app.account()];
    const owner = new Map<string, number>();
    for (let i = 0; i < 5; i++) {
      for (const [n, account] of accounts.entries())
        owner.set(await submit(app, account.key, { model: 'slow', prompt: `${n}-${i}` }), n);
    }
    await app.processor.idle();
    const done = await completions(app);
    expect(done[0]).toBe(first);
    // After the blocker, no account is served twice before the others had a turn.
    const rest = done.slice(1).map((id) => owner.get(id));
    expect(rest).toHaveLength(15);
    for (let i = 0; i + 3 <= rest.length; i += 3) expect(new Set(rest.slice(i, i + 3)).size).toBe(3);
  });

  it('never runs more requests of a model at once than its maxConcurrency', async () => {
    const limited: ModelConfig = { id: 'limited', provider: 'echo', delayMs: 20, timeoutMs: 10_000, maxConcurrency: 2 };
    app = await startTestApp({
      config: {
        models: [limited, { ...slow, id: 'other' }],
        processing: { concurrency: 8, maxAttempts: 1 },
        plans: generous,
      },
    });
    const { key } = await app.account();
    const ids = await Promise.all(
      Array.from({ length: 10 }, (_, i) => submit(app, key, { model: 'limited', prompt: `l${i}` })),
    );
    const other = await submit(app, key, { model: 'other', prompt: 'o' });
    await eventually(async () => ((await completions(app)).length === 11 ? true : undefined), 20_000);
    // Replay the log: how many requests of the limited model were being processed at once, at most.
    const limitedIds = new Set(ids);
    let processing = 0;
    let peak = 0;
    for (const event of await loggedEvents(app)) {
      if (!('reqId' in event) || !limitedIds.has(event.reqId)) continue;
      if (event.type === 'RequestProcessingStarted') peak = Math.max(peak, ++processing);
      if (event.type === 'RequestCompleted' || event.type === 'RequestFailed') processing--;
    }
    expect(peak).toBeLessThanOrEqual(2);
    // The other model was not held up behind the limited one.
    expect((await completions(app)).indexOf(other)).toBeLessThan(10);
  });
});
