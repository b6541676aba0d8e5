import { afterEach, describe, expect, it } from 'vitest';
import { defaultConfig, type ModelConfig } from '../../src/config.js';
import { defaultPlans } from '../../src/domain/plans.js';
import { systemClock } from '../../src/ports/Clock.js';
import { eventually, listen, loggedEvents, startTestApp, type TestApp, type TestConfig } from '../support/testApp.js';

/**
 * Open calls (contract 18) over real sockets: every long-lived call of the OpenAI face (a streamed create of either
 * API, a retrieve stream, a create that waits for its answer) holds a place of its account's `maxOpenCalls` and of the
 * process's share of its connections while it lasts, and gives it back whichever way it ends. One more than the
 * account's bound answers `429`, one more than the process's `503`, both with `Retry-After`; short calls (submits,
 * polls, background creates) and the probes never need a place.
 */

const echo = (id: string, delayMs: number): ModelConfig => ({ id, provider: 'echo', delayMs, timeoutMs: 900_000 });

/** `slow` never answers within a test: its calls stay open until the test ends them. */
const models = [echo('echo', 0), echo('slow', 600_000)];

const withPlans = (maxOpenCalls: number, http?: Partial<NonNullable<TestConfig['http']>>): TestConfig => ({
  models,
  processing: { concurrency: 2, maxAttempts: 1 },
  plans: {
    ...defaultPlans,
    free: { ...defaultPlans.free, maxOpenCalls, submitsPerMinute: 10_000, pollsPerMinute: 10_000 },
  },
  ...(http === undefined ? {} : { http: { ...defaultConfig().http, ...http } }),
});

let app: TestApp | undefined;
let server: Awaited<ReturnType<typeof listen>> | undefined;
/** Every call a test opens, aborted when it ends. */
let aborts: AbortController[] = [];
/**
 * The answers of the calls opened: kept, since a client drops a stream whose answer it no longer holds (undici
 * cancels the body of a collected Response, which closes its connection).
 */
let answers: Promise<Response | undefined>[] = [];
afterEach(async () => {
  for (const abort of aborts) abort.abort();
  aborts = [];
  answers = [];
  await server?.close();
  await app?.stop();
  server = undefined;
  app = undefined;
});

const start = async (config: TestConfig) => {
  app = await startTestApp({ clock: systemClock, config });
  server = await listen(app);
  return { app, url: server.url };
};

/** The kinds of long-lived call, each as the body and path a client sends. */
type Kind = 'responses stream' | 'chat stream' | 'retrieve stream' | 'waiting create' | 'waiting chat';
const allKinds: readonly Kind[] = [
  'responses stream',
  'chat stream',
  'retrieve stream',
  'waiting create',
  'waiting chat',
];

type Caller = { readonly url: string; readonly key: string; readonly accountId: string };

const post = (caller: Caller, path: string, body: unknown, signal?: AbortSignal) =>
  fetch(`${caller.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${caller.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    ...(signal === undefined ? {} : { signal }),
  });

/** A background request on the slow model, for retrieve streams to follow (a short call: it holds nothing). */
const backgroundRequest = async (caller: Caller) => {
  const created = await post(caller, '/v1/responses', { model: 'slow', input: 'followed', background: true });
  expect(created.status).toBe(200);
  return ((await created.json()) as { id: string }).id;
};

/**
 * Starts one long-lived call of `kind`; resolves with its answer when its headers come (a stream at once, a refusal
 * at once, a waiting create only when its request is final). The call stays open until `abort` aborts it.
 */
const openCall = (caller: Caller, kind: Kind, followed: string, model = 'slow') => {
  const abort = new AbortController();
  aborts.push(abort);
  const { signal } = abort;
  const messages = [{ role: 'user', content: `a ${kind}` }];
  const answer =
    kind === 'responses stream'
      ? post(caller, '/v1/responses', { model, input: kind, stream: true }, signal)
      : kind === 'chat stream'
        ? post(caller, '/v1/chat/completions', { model, messages, stream: true }, signal)
        : kind === 'waiting create'
          ? post(caller, '/v1/responses', { model, input: kind }, signal)
          : kind === 'waiting chat'
            ? post(caller, '/v1/chat/completions', { model, messages }, signal)
            : fetch(`${caller.url}/v1/responses/${followed}?stream=true`, {
                headers: { authorization: `Bearer ${caller.key}` },
                signal,
              });
  // An aborted call rejects: the test aborted it on purpose.
  const settled = answer.catch(() => undefined);
  answers.push(settled);
  return { answer: settled, abort: () => abort.abort() };
};

const accountOf = async (testApp: TestApp, url: string, email?: string): Promise<Caller> => {
  const { key, accountId } = await testApp.account('free', email);
  return { url, key, accountId };
};

const queuedCount = async (testApp: TestApp) =>
  (await loggedEvents(testApp)).filter((e) => e.type === 'RequestQueued').length;

type OpenAiError = { error: { message: string; type: string; code: string } };

describe('Open calls per account', () => {
  it('counts every long-lived kind (responses stream, chat stream, retrieve stream, waiting creates of both APIs) against maxOpenCalls, and refuses one more of each with 429 naming the limit, with Retry-After, after spending its submit or poll', async () => {
    const { app: testApp, url } = await start(withPlans(allKinds.length));
    const caller = await accountOf(testApp, url);
    const followed = await backgroundRequest(caller);
    const held = allKinds.map((kind) => openCall(caller, kind, followed));
    await eventually(() => (testApp.openCalls.heldBy(caller.accountId) === allKinds.length ? true : undefined));
    // The streams answered their headers at once; the waiting creates still wait.
    for (const call of held.slice(0, 3)) expect((await call.answer)?.status).toBe(200);

    // The request of each create is queued once its place is taken (and the background one before them).
    const queuedBefore = await eventually(async () => ((await queuedCount(testApp)) === 5 ? 5 : undefined));
    for (const kind of allKinds) {
      const refused = await openCall(caller, kind, followed).answer;
      expect(refused?.status, kind).toBe(429);
      expect(refused?.headers.get('retry-after'), kind).toBe(String(testApp.config.pollIntervalSeconds));
      // The refused call spent its budget like any authenticated call: its RateLimit header says so.
      expect(refused?.headers.get('ratelimit'), kind).toMatch(kind === 'retrieve stream' ? /^"polls"/ : /^"submits"/);
      const body = (await refused?.json()) as OpenAiError;
      expect(body.error.code).toBe('rate_limited');
      expect(body.error.type).toBe('rate_limit_error');
      expect(body.error.message).toContain('already holds 5 open calls');
      expect(body.error.message).toContain("the free plan's maxOpenCalls");
    }
    // A refused create queued nothing, and its account still holds exactly its cap.
    expect(await queuedCount(testApp)).toBe(queuedBefore);
    expect(testApp.openCalls.heldBy(caller.accountId)).toBe(allKinds.length);

    // Short calls hold nothing and still answer: a submit, a poll, a background create, a plain retrieve, /healthz.
    const submitted = await post(caller, '/v1/ai', { model: 'echo', prompt: 'short' });
    expect(submitted.status).toBe(202);
    const { request_id } = (await submitted.json()) as { request_id: string };
    const polled = await fetch(`${url}/v1/ai?req_id=${request_id}`, {
      headers: { authorization: `Bearer ${caller.key}` },
    });
    expect(polled.status).toBe(200);
    expect((await post(caller, '/v1/responses', { model: 'slow', input: 'bg', background: true })).status).toBe(200);
    const plain = await fetch(`${url}/v1/responses/${followed}`, {
      headers: { authorization: `Bearer ${caller.key}` },
    });
    expect(plain.status).toBe(200);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);

    // Another account is not held back by this one's calls.
    const other = await accountOf(testApp, url);
    const otherStream = await openCall(other, 'responses stream', followed).answer;
    expect(otherStream?.status).toBe(200);
    expect(testApp.openCalls.heldBy(other.accountId)).toBe(1);
  });

  it('gives every place back when the clients disconnect mid-call, so the account can open its whole cap again', async () => {
    const cap = 6;
    const { app: testApp, url } = await start(withPlans(cap));
    const caller = await accountOf(testApp, url);
    const followed = await backgroundRequest(caller);
    for (let round = 0; round < 3; round++) {
      const calls = Array.from({ length: cap }, (_, i) =>
        openCall(caller, allKinds[i % allKinds.length] as Kind, followed),
      );
      await eventually(() => (testApp.openCalls.heldBy(caller.accountId) === cap ? true : undefined));
      expect((await openCall(caller, 'chat stream', followed).answer)?.status).toBe(429);
      // The streams read their first frames before the clients go away: they leave mid-stream.
      for (const call of calls.slice(0, 3)) {
        const reader = (await call.answer)?.body?.getReader();
        expect((await reader?.read())?.done).toBe(false);
      }
      for (const call of calls) call.abort();
      await eventually(() => (testApp.openCalls.held() === 0 ? true : undefined));
      expect(testApp.openCalls.heldBy(caller.accountId)).toBe(0);
    }
  });

  it('gives the place back when the call ends by itself: a stream that completes, a waiting create answered, an idempotent replay', async () => {
    const { app: testApp, url } = await start(withPlans(2));
    const caller = await accountOf(testApp, url);
    for (let i = 0; i < 3; i++) {
      // An instant model: each stream ends with its Response, each waiting create with its answer.
      const streamed = await post(caller, '/v1/responses', { model: 'echo', input: `stream ${i}`, stream: true });
      expect(await streamed.text()).toContain('response.completed');
      const chat = await post(caller, '/v1/chat/completions', {
        model: 'echo',
        messages: [{ role: 'user', content: `chat ${i}` }],
        stream: true,
      });
      expect(await chat.text()).toContain('[DONE]');
      const waited = await post(caller, '/v1/responses', { model: 'echo', input: `wait ${i}` });
      expect(((await waited.json()) as { status: string }).status).toBe('completed');
    }
    // A repeat with the same Idempotency-Key answers the first request's result, and holds nothing after.
    const once = (body: unknown) =>
      fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${caller.key}`, 'content-type': 'application/json', 'idempotency-key': 'k1' },
        body: JSON.stringify(body),
      });
    const body = { model: 'echo', messages: [{ role: 'user', content: 'once' }] };
    const first = (await (await once(body)).json()) as { id: string };
    const repeat = await once(body);
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    expect(((await repeat.json()) as { id: string }).id).toBe(first.id);
    await eventually(() => (testApp.openCalls.held() === 0 ? true : undefined));
    // A stream whose request is cancelled ends, and gives its place back too.
    const followed = await backgroundRequest(caller);
    const following = await openCall(caller, 'retrieve stream', followed).answer;
    expect(testApp.openCalls.heldBy(caller.accountId)).toBe(1);
    expect((await post(caller, `/v1/responses/${followed}/cancel`, {})).status).toBe(200);
    expect(await following?.text()).toContain('"code":"cancelled"');
    await eventually(() => (testApp.openCalls.held() === 0 ? true : undefined));
  });

  it('gives every place back when the server stops and closes the connections', async () => {
    const { app: testApp, url } = await start(withPlans(4));
    const caller = await accountOf(testApp, url);
    const followed = await backgroundRequest(caller);
    for (const kind of allKinds.slice(0, 4)) openCall(caller, kind, followed);
    await eventually(() => (testApp.openCalls.held() === 4 ? true : undefined));
    testApp.stopAccepting();
    await server?.close();
    server = undefined;
    await eventually(() => (testApp.openCalls.held() === 0 ? true : undefined));
  });
});

describe('Long-lived calls of all accounts together', () => {
  it('stop at http.maxLongCallsShare of http.maxConnections with 503 and Retry-After, while submits, polls and the probes answer', async () => {
    // 40 connections, a quarter for long calls: 10 places; each account may hold 3.
    const { app: testApp, url } = await start(withPlans(3, { maxConnections: 40, maxLongCallsShare: 0.25 }));
    expect(testApp.openCalls.maxLongCalls).toBe(10);
    const callers = await Promise.all(
      Array.from({ length: 4 }, (_, i) => accountOf(testApp, url, `share${i}@example.com`)),
    );
    const followed = await backgroundRequest(callers[0] as Caller);
    const statuses: number[][] = [];
    for (const caller of callers) {
      const mine: number[] = [];
      for (let i = 0; i < 4; i++) mine.push((await openCall(caller, 'responses stream', followed).answer)?.status ?? 0);
      statuses.push(mine);
    }
    // Three accounts take 9 places, each refused its fourth by its own bound; the fourth account gets the last place,
    // then the process is full.
    expect(statuses).toEqual([
      [200, 200, 200, 429],
      [200, 200, 200, 429],
      [200, 200, 200, 429],
      [200, 503, 503, 503],
    ]);
    expect(testApp.openCalls.held()).toBe(10);
    const fifth = await accountOf(testApp, url, 'share-late@example.com');
    const refused = await openCall(fifth, 'waiting chat', followed).answer;
    expect(refused?.status).toBe(503);
    expect(refused?.headers.get('retry-after')).toBe(String(testApp.config.pollIntervalSeconds));
    const body = (await refused?.json()) as OpenAiError;
    expect(body.error.code).toBe('server_error');
    expect(body.error.message).toContain('http.maxLongCallsShare');
    // Short calls and the probes find a connection and answer.
    expect((await post(fifth, '/v1/ai', { model: 'echo', prompt: 'short' })).status).toBe(202);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    // The metrics say how many are held and why calls were refused.
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toMatch(/^airs_long_calls_open 10$/m);
    expect(metrics).toMatch(/^airs_long_calls_max 10$/m);
    expect(metrics).toMatch(/^airs_long_calls_refused_total\{reason="account_limit"\} 3$/m);
    expect(metrics).toMatch(/^airs_long_calls_refused_total\{reason="process_share"\} 4$/m);
    // One account's calls ending frees places for anyone.
    for (const abort of aborts) abort.abort();
    await eventually(() => (testApp.openCalls.held() === 0 ? true : undefined));
    expect((await openCall(fifth, 'responses stream', followed).answer)?.status).toBe(200);
  });
});
