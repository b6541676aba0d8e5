import { afterEach, describe, expect, it } from 'vitest';
import { defaultConfig, type ModelConfig } from '../../src/config.js';
import { defaultPlans } from '../../src/domain/plans.js';
import { systemClock } from '../../src/ports/Clock.js';
import { servedAt, submit } from '../support/submit.js';
import { eventually, listen, startTestApp, type TestApp, type TestConfig } from '../support/testApp.js';

/**
 * Long polls (`GET /v1/ai?req_id=…` with `Prefer: wait=N`, RFC 7240) over real sockets: the poll is held until its
 * request is final or N seconds pass, spends one poll of the budget, holds a place among the account's open calls,
 * and lets go when the caller leaves or the server stops. A poll said to answer at once (or as soon as its request is
 * final) asks for a wait of a minute, longer than a test may run: that it is answered at all is the order asserted
 * (answered before its wait ended), with no bound on the milliseconds it took. The bounds left are on how long a poll
 * is held, which is the feature itself; they are generous (a loaded 2-core machine).
 */

const echo = (id: string, delayMs: number): ModelConfig => ({ id, provider: 'echo', delayMs, timeoutMs: 900_000 });

/** `fast` answers after 300 ms; `slow` never answers within a test. */
const models = [echo('fast', 300), echo('slow', 600_000)];

const configWith = (options: { maxOpenCalls?: number; pollsPerMinute?: number; maxPollWaitSeconds?: number } = {}) =>
  ({
    models,
    processing: { concurrency: 4, maxAttempts: 1 },
    plans: {
      ...defaultPlans,
      free: {
        ...defaultPlans.free,
        maxOpenCalls: options.maxOpenCalls ?? 10,
        submitsPerMinute: 10_000,
        pollsPerMinute: options.pollsPerMinute ?? 10_000,
      },
    },
    http: { ...defaultConfig().http, maxPollWaitSeconds: options.maxPollWaitSeconds ?? 60 },
  }) satisfies TestConfig;

let app: TestApp | undefined;
let server: Awaited<ReturnType<typeof listen>> | undefined;
let aborts: AbortController[] = [];
afterEach(async () => {
  for (const abort of aborts) abort.abort();
  aborts = [];
  await server?.close();
  await app?.stop();
  server = undefined;
  app = undefined;
});

const start = async (config: TestConfig = configWith()) => {
  app = await startTestApp({ clock: systemClock, config });
  server = await listen(app);
  const { key, accountId } = await app.account('free');
  return { app, url: server.url, key, accountId };
};

/** A poll, with `prefer` as its Prefer header when given; resolves with the answer and how long it took. */
const poll = async (url: string, key: string, reqId: string, prefer?: string) => {
  const abort = new AbortController();
  aborts.push(abort);
  const startedAt = Date.now();
  const answer = await fetch(`${url}/v1/ai?req_id=${reqId}`, {
    headers: { authorization: `Bearer ${key}`, ...(prefer === undefined ? {} : { prefer }) },
    signal: abort.signal,
  });
  const body = (await answer.json()) as { status?: string; response?: string; error?: { code: string } };
  return { answer, body, ms: Date.now() - startedAt, abort: () => abort.abort() };
};

/** What is left of the polls budget, from the RateLimit header (`"polls";r=…;t=…`). */
const pollsLeft = (answer: Response) => Number(/;r=(\d+)/.exec(answer.headers.get('ratelimit') ?? '')?.[1]);

describe('A long poll (Prefer: wait=N)', () => {
  it('answers completed as soon as the request completes, well before its wait, with Preference-Applied', async () => {
    const { url, key } = await start();
    const reqId = await submit(servedAt(url), key, { model: 'fast', prompt: 'a prompt for fast' });

    // Answered completed at all means before its wait ended (a minute, past the test's timeout): the model takes
    // 300 ms; a plain poll loop would have answered queued and advised 5 s.
    const { answer, body } = await poll(url, key, reqId, 'wait=60');

    expect(answer.status).toBe(200);
    expect(body).toMatchObject({ status: 'completed', response: 'a prompt for fast' });
    expect(answer.headers.get('preference-applied')).toBe('wait=60');
    expect(answer.headers.get('retry-after')).toBeNull();

    // Polled again once final, it answers at once (before its wait), under the same preference.
    const again = await poll(url, key, reqId, 'wait=60');
    expect(again.body.status).toBe('completed');
    expect(again.answer.headers.get('preference-applied')).toBe('wait=60');
  });

  it('answers the usual queued body with Retry-After once its N seconds pass, and caps N at http.maxPollWaitSeconds', async () => {
    const { url, key, app: testApp } = await start(configWith({ maxPollWaitSeconds: 2 }));
    const reqId = await submit(servedAt(url), key, { model: 'slow', prompt: 'a prompt for slow' });

    const one = await poll(url, key, reqId, 'respond-async, wait=1');
    expect(one.answer.status).toBe(200);
    expect(one.body).toMatchObject({ req_id: reqId, status: 'queued', model: 'slow' });
    expect(one.answer.headers.get('retry-after')).toBe(String(testApp.config.pollIntervalSeconds));
    expect(one.answer.headers.get('preference-applied')).toBe('wait=1');
    expect(one.ms).toBeGreaterThanOrEqual(900);
    expect(one.ms).toBeLessThan(10_000);

    const capped = await poll(url, key, reqId, 'wait=600');
    expect(capped.body.status).toBe('queued');
    expect(capped.answer.headers.get('preference-applied')).toBe('wait=2');
    expect(capped.ms).toBeGreaterThanOrEqual(1_900);
    expect(capped.ms).toBeLessThan(20_000);
  });

  it('spends one poll of the rate budget, however long it is held', async () => {
    // Three polls a minute: one comes back every 20 s, so none comes back during the test's few seconds.
    const { url, key } = await start(configWith({ pollsPerMinute: 3 }));
    const reqId = await submit(servedAt(url), key, { model: 'slow', prompt: 'a prompt for slow' });
    const before = pollsLeft((await poll(url, key, reqId)).answer);

    const held = await poll(url, key, reqId, 'wait=2');
    const after = await poll(url, key, reqId);

    expect(held.answer.headers.get('preference-applied')).toBe('wait=2');
    expect(held.ms).toBeGreaterThanOrEqual(1_900);
    expect(pollsLeft(held.answer)).toBe(before - 1);
    expect(pollsLeft(after.answer)).toBe(before - 2);
    // The budget is spent: a long poll then is refused at once, like any poll (before its minute's wait).
    const refused = await poll(url, key, reqId, 'wait=60');
    expect(refused.answer.status).toBe(429);
  });

  it('holds a place of the account’s maxOpenCalls; past it, a poll answers at once as a plain poll, without Preference-Applied', async () => {
    const { url, key, accountId, app: testApp } = await start(configWith({ maxOpenCalls: 2 }));
    const reqId = await submit(servedAt(url), key, { model: 'slow', prompt: 'a prompt for slow' });
    const held = [poll(url, key, reqId, 'wait=60'), poll(url, key, reqId, 'wait=60')];
    await eventually(() => (testApp.openCalls.heldBy(accountId) === 2 ? true : undefined));

    // Answered at all: before its minute's wait.
    const third = await poll(url, key, reqId, 'wait=60');

    expect(third.answer.status).toBe(200);
    expect(third.body.status).toBe('queued');
    expect(third.answer.headers.get('preference-applied')).toBeNull();
    expect(third.answer.headers.get('retry-after')).toBe(String(testApp.config.pollIntervalSeconds));
    expect(testApp.openCalls.heldBy(accountId)).toBe(2);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toMatch(/^airs_long_calls_refused_total\{reason="account_limit"\} 1$/m);
    for (const abort of aborts) abort.abort();
    await Promise.allSettled(held);
  });

  it('gives its place back when the client closes its connection during the wait', async () => {
    const { url, key, accountId, app: testApp } = await start(configWith({ maxOpenCalls: 1 }));
    const reqId = await submit(servedAt(url), key, { model: 'slow', prompt: 'a prompt for slow' });
    const abort = new AbortController();
    const leaving = fetch(`${url}/v1/ai?req_id=${reqId}`, {
      headers: { authorization: `Bearer ${key}`, prefer: 'wait=60' },
      signal: abort.signal,
    }).catch(() => undefined);
    await eventually(() => (testApp.openCalls.heldBy(accountId) === 1 ? true : undefined));

    abort.abort();
    await leaving;

    await eventually(() => (testApp.openCalls.heldBy(accountId) === 0 ? true : undefined));
    // The place is free again: the next long poll is held.
    const next = await poll(url, key, reqId, 'wait=1');
    expect(next.answer.headers.get('preference-applied')).toBe('wait=1');
  });

  it('answers every held poll at once with the current state when the server starts to stop, and closes the connections', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    // More held polls than Node's listener warning threshold (10) of one event target.
    const { url, key, accountId, app: testApp } = await start(configWith({ maxOpenCalls: 20 }));
    const reqId = await submit(servedAt(url), key, { model: 'slow', prompt: 'a prompt for slow' });
    const waiting = Array.from({ length: 12 }, () => poll(url, key, reqId, 'wait=60'));
    await eventually(() => (testApp.openCalls.heldBy(accountId) === 12 ? true : undefined));

    // What a drain does first (SIGTERM): every new call answers 503 from now on. Their waits (a minute) end after
    // the test's timeout: all of them answered means answered by the stop.
    testApp.stopAccepting();
    const answers = await Promise.all(waiting);
    process.off('warning', onWarning);

    for (const { answer, body } of answers) {
      expect(answer.status).toBe(200);
      expect(body.status).toBe('queued');
      expect(answer.headers.get('preference-applied')).toBeNull();
      expect(answer.headers.get('connection')).toBe('close');
    }
    expect(warnings.map((warning) => warning.message)).toEqual([]);
    // Nothing is left in flight to hold the drain up, nor any place held.
    expect(testApp.traffic.inFlight).toBe(0);
    expect(testApp.openCalls.heldBy(accountId)).toBe(0);
  });

  it('is counted under its own route in /metrics, apart from the plain polls', async () => {
    const { url, key } = await start();
    const reqId = await submit(servedAt(url), key, { model: 'fast', prompt: 'a prompt for fast' });
    await poll(url, key, reqId, 'wait=20');

    const metrics = await (await fetch(`${url}/metrics`)).text();

    expect(metrics).toMatch(
      /airs_http_requests_total\{method="GET",route="\/v1\/ai \(Prefer: wait\)",status="200"\} 1/,
    );
  });
});

describe('A poll without a wait, or one the server is not asked to hold', () => {
  it('answers at once with Retry-After and no Preference-Applied, as the specification says', async () => {
    const { url, key } = await start();
    const reqId = await submit(servedAt(url), key, { model: 'slow', prompt: 'a prompt for slow' });

    for (const prefer of [undefined, 'respond-async', 'wait=0', 'wait=soon']) {
      const { answer, body, ms } = await poll(url, key, reqId, prefer);
      expect(body.status, String(prefer)).toBe('queued');
      expect(answer.headers.get('preference-applied'), String(prefer)).toBeNull();
      expect(answer.headers.get('retry-after'), String(prefer)).toBe('5');
      expect(ms).toBeLessThan(5_000);
    }
  });

  it('answers at once when long polls are turned off (http.maxPollWaitSeconds: 0)', async () => {
    const { url, key } = await start(configWith({ maxPollWaitSeconds: 0 }));
    const reqId = await submit(servedAt(url), key, { model: 'slow', prompt: 'a prompt for slow' });

    // Answered at all: before its minute's wait.
    const { answer, body } = await poll(url, key, reqId, 'wait=60');

    expect(body.status).toBe('queued');
    expect(answer.headers.get('preference-applied')).toBeNull();
  });

  it('answers 404 at once for another account’s request, as a plain poll does (nothing of it is waited for)', async () => {
    const { url, app: testApp, key } = await start();
    const reqId = await submit(servedAt(url), key, { model: 'slow', prompt: 'a prompt for slow' });
    const other = await testApp.account('free');

    // Answered at all: before its minute's wait.
    const { answer, body } = await poll(url, other.key, reqId, 'wait=60');

    expect(answer.status).toBe(404);
    expect(body.error?.code).toBe('not_found');
    expect(answer.headers.get('preference-applied')).toBeNull();
  });
});
