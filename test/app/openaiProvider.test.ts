import { type Logger, pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { upstreamName } from '../../src/adapters/models/upstreamName.js';
import type { ModelConfig } from '../../src/config.js';
import { defaultPlans } from '../../src/domain/plans.js';
import type { ManualClock } from '../../src/ports/Clock.js';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';
import { unusedPort } from '../support/ports.js';
import { submit } from '../support/submit.js';
import { eventually, loggedEvents, startTestApp, type TestApp } from '../support/testApp.js';

const upstreamKey = 'sk-upstream-secret-0123456789';

describe('The openai provider against a local OpenAI-compatible server', () => {
  let upstream: Awaited<ReturnType<typeof startFakeOpenAi>>;
  let app: TestApp;
  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    process.env.AIRS_TEST_UPSTREAM_KEY = upstreamKey;
  });
  afterAll(async () => {
    delete process.env.AIRS_TEST_UPSTREAM_KEY;
    await upstream.close();
  });
  afterEach(() => app?.stop());

  const start = async (
    overrides: Partial<Extract<ModelConfig, { provider: 'openai' }>> = {},
    logger?: Logger,
    maxAttempts = 1,
  ) => {
    const model: ModelConfig = {
      id: 'gpt',
      provider: 'openai',
      baseUrl: upstream.baseUrl,
      apiKeyEnv: 'AIRS_TEST_UPSTREAM_KEY',
      upstreamModel: 'llama-3-8b',
      timeoutMs: 2_000,
      maxRetries: 1,
      ...overrides,
    };
    app = await startTestApp({
      logger,
      config: {
        models: [model],
        processing: { concurrency: 4, maxAttempts },
        plans: { ...defaultPlans, free: { ...defaultPlans.free, submitsPerMinute: 1_000 } },
      },
    });
    return app.account();
  };
  const submitAndSettle = async (key: string, prompt: string) => {
    const request_id = await submit(app, key, { model: 'gpt', prompt });
    const settled = await eventually(async () => {
      // A retry waits for its backoff on the app's clock: let it pass.
      (app.clock as ManualClock).advance(2_000);
      const polled = await app.call('GET', `/v1/ai?req_id=${request_id}`, { key });
      return polled.status === 200 && ((await polled.clone().json()) as { status: string }).status === 'queued'
        ? undefined
        : polled;
    }, 15_000);
    const events = (await loggedEvents(app)).filter((e) => 'reqId' in e && e.reqId === request_id);
    return { polled: settled, events, request_id };
  };

  it('completes a request with the upstream’s answer, sending the prompt as a user message to the upstream model with the key from the environment', async () => {
    const { key } = await start();
    const { polled } = await submitAndSettle(key, 'hello upstream');
    expect(await polled.json()).toMatchObject({
      status: 'completed',
      model: 'gpt',
      response: 'upstream says: hello upstream',
    });
    const call = upstream.received.find((r) => r.body.messages[0]?.content === 'hello upstream');
    expect(call?.authorization).toBe(`Bearer ${upstreamKey}`);
    expect(call?.body).toMatchObject({ model: 'llama-3-8b', messages: [{ role: 'user', content: 'hello upstream' }] });
    const ready = (await (await app.call('GET', '/readyz')).json()) as { upstreams: Record<string, unknown> };
    expect(ready.upstreams).toEqual({ gpt: { state: 'ok', seen_at: expect.any(String) } });
  });

  it('retries an upstream 429 (honouring Retry-After) and completes', async () => {
    const { key } = await start();
    const { polled } = await submitAndSettle(key, 'rate-limit-once');
    expect(await polled.json()).toMatchObject({ status: 'completed', response: 'upstream says: rate-limit-once' });
    expect(upstream.calls('rate-limit-once')).toBe(2);
  });

  it('fails a request whose upstream keeps answering 500, with the reason in the log and not in the answer', async () => {
    const { key } = await start();
    const { polled, events } = await submitAndSettle(key, 'always-500');
    expect(polled.status).toBe(500);
    const body = await polled.text();
    expect(body).not.toContain('crashed');
    expect(events.at(-1)).toMatchObject({ type: 'RequestFailed' });
    expect((events.at(-1) as { reason: string }).reason).toContain(`upstream ${upstream.baseUrl} answered 500`);
    expect(upstream.calls('always-500')).toBe(2);
  });

  it('abandons an upstream that hangs after the model’s timeout', async () => {
    const { key } = await start({ timeoutMs: 300, maxRetries: 0 });
    const { polled, events } = await submitAndSettle(key, 'hang');
    expect(polled.status).toBe(500);
    expect((events.at(-1) as { reason: string }).reason).toMatch(/timed out/);
  });

  it.each(['malformed', 'not-json'])('fails a request whose upstream answers a %s body', async (prompt) => {
    const { key } = await start({ maxRetries: 0 });
    const { polled, events } = await submitAndSettle(key, prompt);
    expect(polled.status).toBe(500);
    expect(events.at(-1)).toMatchObject({ type: 'RequestFailed' });
  });

  it('fails a request whose upstream is a closed port on 127.0.0.1, with a reason in the event log and the log that names the upstream and ECONNREFUSED, never the key', async () => {
    const port = await unusedPort();
    const baseUrl = `http://127.0.0.1:${port}/v1`;
    const lines: Array<{ msg: string; reason?: string }> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const { key } = await start({ baseUrl, maxRetries: 0 }, logger);
    const { polled, events } = await submitAndSettle(key, 'anyone there?');
    expect(polled.status).toBe(500);
    // The cause is said once, as the system said it.
    const reason = `upstream ${baseUrl} unreachable: connect ECONNREFUSED 127.0.0.1:${port}`;
    expect(events.at(-1)).toMatchObject({ type: 'RequestFailed', reason: `gave up after 1 attempts: ${reason}` });
    // The log line follows the durable outcome that the poll already saw: wait for it (bounded).
    const logged = await eventually(() => lines.find((line) => line.msg === 'attempt failed'));
    expect(logged.reason).toBe(reason);
    expect(JSON.stringify(lines)).not.toContain(upstreamKey);
  });

  it.each([400, 401, 403, 404, 422])(
    'fails a request for good at once when its upstream answers %i: one upstream call, no retry, and the poll says the upstream refused it',
    async (status) => {
      const { key } = await start({ maxRetries: 2 }, undefined, 3);
      const prompt = `answer ${status}`;
      const { polled, events, request_id } = await submitAndSettle(key, prompt);
      expect(upstream.calls(prompt)).toBe(1);
      expect(polled.status).toBe(500);
      const body = (await polled.json()) as { error: { code: string; message: string; details?: unknown } };
      expect(body.error).toEqual({
        code: 'server_error',
        message: `processing of request ${request_id} failed: the model's upstream refused the request (${status})`,
        details: { final: true },
      });
      expect(events.map((event) => event.type)).toEqual(['RequestQueued', 'RequestProcessingStarted', 'RequestFailed']);
      expect(events.at(-1)).toMatchObject({ permanent: true });
    },
  );

  it('does not retry an upstream 404 even when the upstream asks for a retry (x-should-retry: true)', async () => {
    const { key } = await start({ maxRetries: 2 }, undefined, 3);
    const { polled } = await submitAndSettle(key, 'answer 404 retry me');
    expect(upstream.calls('answer 404 retry me')).toBe(1);
    expect(polled.status).toBe(500);
  });

  it('fails a request whose base URL lacks /v1 after exactly one upstream call, saying the upstream refused it (404) without naming it', async () => {
    const { key } = await start({ baseUrl: upstream.rootUrl, maxRetries: 2 }, undefined, 3);
    const before = upstream.hits('POST /chat/completions');
    const { polled } = await submitAndSettle(key, 'is v1 missing?');
    expect(upstream.hits('POST /chat/completions') - before).toBe(1);
    const text = await polled.text();
    expect(text).toContain("the model's upstream refused the request (404)");
    expect(text).not.toContain('127.0.0.1');
    expect(text).not.toContain('submit it again');
    // The call itself is how /readyz last saw the upstream (no check ran in this app).
    const ready = (await (await app.call('GET', '/readyz')).json()) as { upstreams: Record<string, unknown> };
    expect(ready.upstreams).toEqual({
      gpt: { state: 'problem', cause: 'answered 404: is `/v1` missing from its baseUrl?', seen_at: expect.any(String) },
    });
  });

  it('retries a request whose upstream is a closed port, then fails it saying the upstream could not be reached, without the URL', async () => {
    const port = await unusedPort();
    const { key } = await start({ baseUrl: `http://127.0.0.1:${port}/v1`, maxRetries: 0 }, undefined, 2);
    const { polled, events, request_id } = await submitAndSettle(key, 'anyone home?');
    expect(events.filter((event) => event.type === 'RequestProcessingStarted')).toHaveLength(2);
    expect(events.at(-1)).toMatchObject({ type: 'RequestFailed' });
    expect(events.at(-1)).not.toHaveProperty('permanent');
    const body = (await polled.json()) as { error: { message: string } };
    expect(body.error.message).toBe(
      `processing of request ${request_id} failed: the model's upstream could not be reached`,
    );
  });

  it('fails a request whose upstream answers more than maxAnswerBytes once its attempts are spent, one upstream call per attempt, telling the caller the bound and never the URL', async () => {
    const { key } = await start({ maxAnswerBytes: 100_000, maxRetries: 2 }, undefined, 2);
    const prompt = 'huge 200000';
    const { polled, events, request_id } = await submitAndSettle(key, prompt);
    // Retried by the queue like a 5xx, never inside the attempt: the SDK's retries come before the answer is read.
    expect(upstream.calls(prompt)).toBe(2);
    expect(events.filter((event) => event.type === 'RequestProcessingStarted')).toHaveLength(2);
    expect(events.at(-1)).toMatchObject({
      type: 'RequestFailed',
      reason: `gave up after 2 attempts: upstream ${upstream.baseUrl} answered more than maxAnswerBytes (100000 bytes)`,
    });
    expect(events.at(-1)).not.toHaveProperty('permanent');
    expect(polled.status).toBe(500);
    const body = (await polled.json()) as { error: { message: string } };
    expect(body.error.message).toBe(
      `processing of request ${request_id} failed: the model's answer was larger than its maxAnswerBytes (100000 bytes)`,
    );
    const ready = (await (await app.call('GET', '/readyz')).json()) as { upstreams: Record<string, unknown> };
    expect(ready.upstreams).toEqual({
      gpt: { state: 'problem', cause: 'answered more than maxAnswerBytes (100000 bytes)', seen_at: expect.any(String) },
    });
  });

  it('names an upstream by its base URL without user, password, query or fragment', () => {
    expect(upstreamName('https://user:pa55@llm.example:8443/v1/?api-key=secret#x')).toBe('https://llm.example:8443/v1');
    expect(upstreamName('http://127.0.0.1:11434/v1')).toBe('http://127.0.0.1:11434/v1');
  });

  it('never writes the upstream key into the event log', async () => {
    const { key } = await start();
    await submitAndSettle(key, 'always-500');
    expect(JSON.stringify(await loggedEvents(app))).not.toContain(upstreamKey);
  });
});
