import { describe, expect, it } from 'vitest';
import { AirsError, AirsTimeoutError, createClient } from '../../src/client/index.js';
import { defaultPlans } from '../../src/domain/plans.js';
import { clientOf, startClientApp } from './inProcessApp.js';

/** A plan that allows one submit and one poll a minute, so every second call meets a 429. */
const start = () =>
  startClientApp({
    plans: { ...defaultPlans, free: { ...defaultPlans.free, maxKeys: 1, submitsPerMinute: 1, pollsPerMinute: 1 } },
  });

describe('the client against the real service’s rate limits (429)', { timeout: 30_000 }, () => {
  it('waits out a 429 for the Retry-After the service sends, then the submit goes through', async () => {
    const app = await start();
    const { client, delays, retries } = await clientOf(app);
    await client.submit('echo', 'first');

    const second = await client.submit('echo', 'second');

    expect(second.request_id).toMatch(/^req_/);
    expect(retries).toEqual([{ method: 'POST', status: 429, code: 'rate_limited', retry: 1, delayMs: 60_000 }]);
    expect(delays).toEqual([60_000]);
  });

  it('waits out 429s while polling too, so a tight poll budget only slows the wait down', async () => {
    const app = await start();
    const { client, delays, retries } = await clientOf(app, { onSleep: () => app.processor.idle() });

    const done = await client.run('soon', 'patience');

    expect(done.response).toBe('patience');
    expect(retries.map((retry) => retry.status)).toEqual([429]);
    // The queued answer's 5 s, then the rest of the minute the one-poll budget needs to refill.
    expect(delays).toEqual([5_000, 55_000]);
  });

  it('gives up on a 429 once the rate-limit retries are spent, with the code, the Retry-After and the details', async () => {
    const app = await start();
    const { key } = await app.account();
    const client = createClient({
      baseUrl: 'http://airs.test',
      apiKey: key,
      fetch: (input, init) => app.http.request(input, init),
      sleep: () => Promise.reject(new Error('must not sleep')),
      maxRateLimitRetries: 0,
    });
    await client.submit('echo', 'first');

    const failure = await client.submit('echo', 'second').catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(AirsError);
    expect(failure).toMatchObject({ status: 429, code: 'rate_limited', retryAfterMs: 60_000 });
    expect((failure as AirsError).details).toMatchObject({ budget: 'submits', retry_after_seconds: 60 });
  });

  it('counts the time a submit spends waiting out a 429 against the timeout of run', async () => {
    const app = await start();
    const { client, delays } = await clientOf(app);
    await client.submit('echo', 'first');

    const failure = await client.run('echo', 'second', { timeoutMs: 10_000 }).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(AirsTimeoutError);
    expect(failure).toMatchObject({ reqId: undefined, polls: 0 });
    expect(delays).toEqual([10_000]);
  });
});
