import { Effect } from 'effect';
import { afterEach, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/ports/Clock.js';
import { sessionBrowser } from '../support/dashboardForm.js';
import { startTestApp, type TestApp } from '../support/testApp.js';

/** The dashboard says a request is expired as the API does: from its expiry time on, before the sweeper writes it. */

const dayMs = 86_400_000;

let app: TestApp;
afterEach(() => app.stop());

/** The status badge of the request page, and of the request's row in the requests table. */
const shownStatus = async (visitor: ReturnType<typeof sessionBrowser>, reqId: string) => {
  const page = (await visitor.get(`/dashboard/requests/${reqId}`)).text;
  const list = (await visitor.get('/dashboard/requests')).text;
  const row = new RegExp(`<code>${reqId}</code>[\\s\\S]*?<span class="badge status-(\\w+)">`).exec(list)?.[1];
  return { page: /id="request-status">\s*(\w+)/.exec(page)?.[1], row };
};

describe('The dashboard and a request past its expiry time', () => {
  it('shows it expired on its page and in the requests table from its expiry time on, while the log does not say so yet', async () => {
    app = await startTestApp();
    const clock = app.clock as ManualClock;
    const visitor = sessionBrowser(app);
    await visitor.signup('expiry@example.com');
    const accountId = (await app.store.reads.accountIdByEmail('expiry@example.com')) as string;
    const { key } = await Effect.runPromise(app.accounts.createKey(accountId));
    const answer = await app.call('POST', '/v1/ai', { key, body: { model: 'echo', prompt: 'soon gone' } });
    const reqId = ((await answer.json()) as { request_id: string }).request_id;
    await app.processor.idle();

    clock.advance(dayMs - 1);
    expect(await shownStatus(visitor, reqId)).toEqual({ page: 'completed', row: 'completed' });
    clock.advance(1);
    expect(await shownStatus(visitor, reqId)).toEqual({ page: 'expired', row: 'expired' });
    // Nothing wrote its expiry: the page judged it by the time alone.
    expect((await app.store.reads.request(reqId))?.status).toBe('completed');
  });
});
