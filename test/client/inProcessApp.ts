import { afterEach } from 'vitest';
import { createClient, type RetryInfo } from '../../src/client/index.js';
import type { ManualClock } from '../../src/ports/Clock.js';
import { startTestApp, type TestApp, type TestConfig } from '../support/testApp.js';
import { inProcessFetch, recordingSleep } from './support.js';

/** The real app in-process for client tests, stopped after each test of the file that imports this. */

const apps: TestApp[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.stop()));
});

/** The whole app in-process; `slow` stays queued for a minute, `soon` completes after 1.5 s of real time. */
export const startClientApp = async (config: TestConfig = {}) => {
  const app = await startTestApp({
    config: {
      models: [
        { id: 'echo', provider: 'echo', delayMs: 0, timeoutMs: 60_000 },
        { id: 'soon', provider: 'echo', delayMs: 1_500, timeoutMs: 60_000 },
        { id: 'slow', provider: 'echo', delayMs: 60_000, timeoutMs: 120_000 },
      ],
      ...config,
    },
  });
  apps.push(app);
  return app;
};

/** A client of `app` whose sleeps are recorded and move the app's manual clock instead of waiting. */
export const clientOf = async (
  app: TestApp,
  options: {
    onSleep?: (ms: number, index: number) => void | Promise<void>;
    firstPollDelayMs?: number;
    pollWaitSeconds?: number;
  } = {},
) => {
  const { key } = await app.account();
  const clock = app.clock as ManualClock;
  const time = recordingSleep(clock, options.onSleep);
  const http = inProcessFetch(app);
  const retries: RetryInfo[] = [];
  const client = createClient({
    baseUrl: 'http://airs.test',
    apiKey: key,
    fetch: http.fetch,
    sleep: time.sleep,
    now: () => clock.now(),
    onRetry: (info) => retries.push(info),
    // Most tests are about the polling rules: no first pause unless the test asks for one.
    firstPollDelayMs: options.firstPollDelayMs ?? 0,
    // The specification's loop (Retry-After, 5 s) unless a test asks for long polls: a held poll waits in real time,
    // which the manual clock does not move.
    pollWaitSeconds: options.pollWaitSeconds ?? 0,
  });
  return { client, key, delays: time.delays, calls: http.calls, retries };
};
