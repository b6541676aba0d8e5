import { Effect } from 'effect';
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/config.js';
import { defaultPlans } from '../../src/domain/plans.js';
import { systemClock } from '../../src/ports/Clock.js';
import { sessionBrowser } from '../support/dashboardForm.js';
import { submit } from '../support/submit.js';
import { eventually, startTestApp, type TestApp } from '../support/testApp.js';

/** `queue_position` on the `/v1/ai` poll and the dashboard's request page (contract 20). */

// The one worker is held by a request of another model for a few seconds while the others queue behind it.
const blocker: ModelConfig = { id: 'blocker', provider: 'echo', delayMs: 4_000, timeoutMs: 30_000 };
const quick: ModelConfig = { id: 'quick', provider: 'echo', delayMs: 0, timeoutMs: 10_000 };
const generous = { ...defaultPlans, free: { ...defaultPlans.free, submitsPerMinute: 100_000, maxQueued: 100_000 } };

type Polled = { status: string; queue_position?: number };

let app: TestApp;
afterEach(() => app?.stop());

const poll = async (key: string, reqId: string): Promise<Polled> => {
  const answer = await app.call('GET', `/v1/ai?req_id=${reqId}`, { key });
  expect(answer.status).toBe(200);
  return (await answer.json()) as Polled;
};

describe('queue_position', () => {
  it('says how many due requests of its model go first while a request waits, and nothing once it runs or is done', async () => {
    app = await startTestApp({
      clock: systemClock,
      config: { models: [blocker, quick], processing: { concurrency: 1, maxAttempts: 1 }, plans: generous },
    });
    const visitor = sessionBrowser(app);
    await visitor.signup('waiting@example.com');
    const aId = (await app.store.reads.accountIdByEmail('waiting@example.com')) as string;
    const a = { key: (await Effect.runPromise(app.accounts.createKey(aId))).key };
    const b = await app.account();
    const running = await submit(app, b.key, { model: 'blocker', prompt: 'holds the only worker' });
    await eventually(async () =>
      (await app.store.reads.request(running))?.status === 'processing' ? true : undefined,
    );

    const ofA = [];
    for (let i = 0; i < 3; i++) ofA.push(await submit(app, a.key, { model: 'quick', prompt: `a${i}` }));
    const ofB = [];
    for (let i = 0; i < 2; i++) ofB.push(await submit(app, b.key, { model: 'quick', prompt: `b${i}` }));
    const flex = await submit(app, b.key, { model: 'quick', prompt: 'flex', fields: { service_tier: 'flex' } });

    // The request being processed is queued, with no position.
    const runningBody = await poll(b.key, running);
    expect(runningBody.status).toBe('queued');
    expect(runningBody).not.toHaveProperty('queue_position');
    // Lanes in turn: A's 1st and B's 1st are next (0); each 2nd waits for one of each lane (2); A's 3rd for two of
    // each (4). The flex request waits for all five default ones.
    const positions = async (ids: string[], key: string) =>
      (await Promise.all(ids.map(async (id) => (await poll(key, id)).queue_position))).sort();
    expect(await positions(ofA, a.key)).toEqual([0, 2, 4]);
    expect(await positions(ofB, b.key)).toEqual([0, 2]);
    expect(await positions([flex], b.key)).toEqual([5]);
    expect((await app.store.reads.request(running))?.status).toBe('processing');

    // The dashboard's request page says it too.
    const last = ofA[2] as string;
    const shown = (await poll(a.key, last)).queue_position as number;
    const page = await visitor.get(`/dashboard/requests/${last}`);
    expect(page.status).toBe(200);
    expect(page.text).toMatch(new RegExp(`Queue position</dt>\\s*<dd id="queue-position">${shown}<`));

    // Once done, no position.
    await app.processor.idle();
    for (const [key, id] of [[b.key, running], ...ofA.map((id) => [a.key, id]), [b.key, flex]] as const) {
      const body = await poll(key, id);
      expect(body.status).toBe('completed');
      expect(body).not.toHaveProperty('queue_position');
    }
    const donePage = await visitor.get(`/dashboard/requests/${last}`);
    expect(donePage.text).not.toContain('Queue position');
  }, 30_000);
});
