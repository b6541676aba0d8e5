import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/ports/Clock.js';
import { postSubmission, submit } from '../support/submit.js';
import { startTestApp, type TestApp } from '../support/testApp.js';

/** Rate limits are counted per account and must stay exact across a restart: no fresh burst for anyone. */
describe('Rate limits across a restart', () => {
  const apps: TestApp[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.stop();
  });

  const restartable = async () => {
    const clock = new ManualClock();
    const first = await startTestApp({ clock });
    const { key } = await first.account('free');
    const restart = async () => {
      await first.stop({ keepData: true });
      const second = await startTestApp({ storeOf: first, clock });
      apps.push(second);
      return second;
    };
    return { first, key, restart };
  };

  it('does not give an account a fresh submit burst after a restart', async () => {
    const { first, key, restart } = await restartable();
    // A free account's whole minute: 60 submits, the last ones refused as bad input (they spend the budget too).
    for (let i = 0; i < 60; i++) {
      const body = i < 50 ? { model: 'echo', prompt: `p${i}` } : { model: 'echo' };
      expect((await first.call('POST', '/v1/ai', { key, body })).status).toBe(i < 50 ? 202 : 400);
    }
    const second = await restart();
    const after = await postSubmission(second, key, { prompt: 'one more' });
    expect(after.status).toBe(429);
    expect(after.headers.get('retry-after')).toBe('1');
  });

  it('does not give an account a fresh poll burst after a restart', async () => {
    const { first, key, restart } = await restartable();
    const reqId = await submit(first, key, { prompt: 'x' });
    for (let i = 0; i < 600; i++) await first.call('GET', `/v1/ai?req_id=${reqId}`, { key });
    const second = await restart();
    const after = await second.call('GET', `/v1/ai?req_id=${reqId}`, { key });
    expect(after.status).toBe(429);
  });
});
