import { Effect } from 'effect';
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/config.js';
import { defaultPlans } from '../../src/domain/plans.js';
import { systemClock } from '../../src/ports/Clock.js';
import {
  type CallInit,
  loggedEvents,
  startTestApp,
  type TestApp,
  type TestAppOptions,
  type TestConfig,
} from '../support/testApp.js';

/**
 * The OpenAI-compatible face (contract 11) in process: the wire format the official SDKs read, the same accounts,
 * limits, queue and log as `/v1/ai`, and OpenAI's error shape with the contract's statuses.
 */

const echo = (id: string, delayMs: number, timeoutMs = 60_000): ModelConfig => ({
  id,
  provider: 'echo',
  delayMs,
  timeoutMs,
});

const faceConfig: TestConfig = {
  models: [echo('echo', 0), echo('slow', 60_000, 120_000), echo('doomed', 60_000, 1)],
  maxBodyBytes: 4096,
  maxPromptChars: 200,
  processing: { concurrency: 1, maxAttempts: 1 },
};

type Answer = { readonly status: number; readonly headers: Headers; readonly body: Record<string, unknown> };
type OpenAiError = { message: string; type: string; param: string | null; code: string };
type ResponseObject = {
  id: string;
  object: string;
  created_at: number;
  status: string;
  model: string;
  output: {
    type: string;
    id: string;
    status: string;
    role: string;
    content: { type: string; text: string; annotations: unknown[] }[];
  }[];
  error: { code: string; message: string } | null;
  incomplete_details: null;
  usage: null;
};

const apps: TestApp[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.stop();
});
const start = async (options: TestAppOptions = {}) => {
  const app = await startTestApp({ ...options, config: { ...faceConfig, ...options.config } });
  apps.push(app);
  return app;
};

const call = async (app: TestApp, method: string, path: string, init?: CallInit): Promise<Answer> => {
  const response = await app.call(method, path, init);
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: JSON.parse(text) as Record<string, unknown> };
};

const create = (app: TestApp, key: string, body: unknown, headers?: Record<string, string>) =>
  call(app, 'POST', '/v1/responses', { key, body, headers });
const retrieve = (app: TestApp, key: string, id: string) =>
  call(app, 'GET', `/v1/responses/${encodeURIComponent(id)}`, { key });
const cancel = (app: TestApp, key: string, id: string) =>
  call(app, 'POST', `/v1/responses/${encodeURIComponent(id)}/cancel`, { key });

/** Asserts OpenAI's error shape (exactly message, type, param, code), its status and JSON; returns the error. */
const expectOpenAiError = (answer: Answer, status: number, code: string, type: string): OpenAiError => {
  expect({ status: answer.status, body: answer.body }).toMatchObject({ status });
  expect(answer.headers.get('content-type')).toMatch(/^application\/json\b/);
  expect(Object.keys(answer.body)).toEqual(['error']);
  const error = answer.body.error as OpenAiError;
  expect(Object.keys(error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(error).toMatchObject({ code, type });
  expect(typeof error.message).toBe('string');
  expect(error.message.length).toBeGreaterThan(0);
  expect(error.param === null || typeof error.param === 'string').toBe(true);
  return error;
};

const rateLimitOf = (answer: Answer) => ({
  policy: answer.headers.get('ratelimit-policy'),
  remaining: Number(/;r=(\d+);/.exec(answer.headers.get('ratelimit') ?? '')?.[1]),
});

const reqIdOf = (responseId: string) => `req_${responseId.slice('resp_'.length)}`;

const eventTypesOf = async (app: TestApp, reqId: string) =>
  (await loggedEvents(app)).filter((e) => 'reqId' in e && e.reqId === reqId).map((e) => e.type);

describe('GET /v1/models', () => {
  it('lists the configured models as OpenAI model objects owned by airs, spending a poll', async () => {
    const app = await start();
    const { key } = await app.account('free');
    const answer = await call(app, 'GET', '/v1/models', { key });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^application\/json\b/);
    const created = (answer.body.data as { created: number }[])[0]?.created;
    expect(Number.isInteger(created)).toBe(true);
    expect(answer.body).toEqual({
      object: 'list',
      data: ['echo', 'slow', 'doomed'].map((id) => ({ id, object: 'model', created, owned_by: 'airs' })),
    });
    expect(rateLimitOf(answer)).toEqual({ policy: '"polls";q=600;w=60', remaining: 599 });
  });

  it('answers one configured model by its id, and an unknown one with 404 in OpenAI’s shape', async () => {
    const app = await start();
    const { key } = await app.account();
    const one = await call(app, 'GET', '/v1/models/slow', { key });
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id: 'slow', object: 'model', owned_by: 'airs' });
    expectOpenAiError(await call(app, 'GET', '/v1/models/gpt-9', { key }), 404, 'not_found', 'invalid_request_error');
  });
});

describe('POST /v1/responses in the background, then GET /v1/responses/{id}', () => {
  it('answers 200 at once with a queued Response whose id is the request id under resp_, spending a submit', async () => {
    const app = await start();
    const { key } = await app.account('free');
    const answer = await create(app, key, { model: 'echo', input: 'Hello there', background: true });
    expect(answer.status).toBe(200);
    const response = answer.body as ResponseObject;
    expect(response).toMatchObject({
      object: 'response',
      status: 'queued',
      model: 'echo',
      output: [],
      error: null,
      incomplete_details: null,
      usage: null,
    });
    expect(response.id).toMatch(/^resp_[A-Za-z0-9_-]{22,}$/);
    expect(Number.isInteger(response.created_at)).toBe(true);
    expect(rateLimitOf(answer)).toEqual({ policy: '"submits";q=60;w=60', remaining: 59 });
    // The same request as /v1/ai sees it: one queue, one log.
    expect((await eventTypesOf(app, reqIdOf(response.id)))[0]).toBe('RequestQueued');
  });

  it('answers a completed Response with the text as one assistant message of one output_text part', async () => {
    const app = await start();
    const { key } = await app.account();
    const { body } = await create(app, key, { model: 'echo', input: 'Say this back', background: true });
    await app.processor.idle();
    const answer = await retrieve(app, key, (body as ResponseObject).id);
    expect(answer.status).toBe(200);
    const response = answer.body as ResponseObject;
    expect(response).toMatchObject({ id: (body as ResponseObject).id, status: 'completed', error: null });
    expect(response.output).toEqual([
      {
        type: 'message',
        id: expect.stringMatching(/^msg_/),
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'Say this back', annotations: [] }],
      },
    ]);
    expect(rateLimitOf(answer).policy).toBe('"polls";q=600;w=60');
  });

  it('answers a request submitted on /v1/ai by its resp_ id and by its req_ id alike', async () => {
    const app = await start();
    const { key } = await app.account();
    const posted = await call(app, 'POST', '/v1/ai', { key, body: { model: 'echo', prompt: 'from the other face' } });
    const reqId = posted.body.request_id as string;
    await app.processor.idle();
    const byResp = await retrieve(app, key, `resp_${reqId.slice(4)}`);
    const byReq = await retrieve(app, key, reqId);
    expect(byResp.body).toEqual(byReq.body);
    expect(byResp.body).toMatchObject({ id: `resp_${reqId.slice(4)}`, status: 'completed' });
    expect((byResp.body as ResponseObject).output[0]?.content[0]?.text).toBe('from the other face');
  });

  it('shows a request a worker has as in_progress, and one waiting behind it as queued', async () => {
    const app = await start();
    const { key } = await app.account();
    const first = (await create(app, key, { model: 'slow', input: 'first', background: true })).body as ResponseObject;
    const second = (await create(app, key, { model: 'slow', input: 'second', background: true }))
      .body as ResponseObject;
    // The create answers say queued either way (contract 11); a retrieve tells the two apart.
    expect([first.status, second.status]).toEqual(['queued', 'queued']);
    expect((await retrieve(app, key, first.id)).body).toMatchObject({ status: 'in_progress', output: [] });
    expect((await retrieve(app, key, second.id)).body).toMatchObject({ status: 'queued', output: [] });
  });

  it('answers a request whose processing failed for good with 200, status failed and a server_error, not a 500', async () => {
    const app = await start();
    const { key } = await app.account();
    const { body } = await create(app, key, { model: 'doomed', input: 'this will time out', background: true });
    await app.processor.idle();
    const answer = await retrieve(app, key, (body as ResponseObject).id);
    expect(answer.status).toBe(200);
    // OpenAI's `{code, message}` with `type` and `param` too: the Vercel AI SDK's schema of a Response requires
    // them, and without them refuses the whole answer as `Invalid JSON response` instead of raising the failure.
    expect(answer.body).toMatchObject({
      status: 'failed',
      output: [],
      error: {
        code: 'server_error',
        type: 'server_error',
        param: null,
        message: `processing of request ${(body as ResponseObject).id} failed after its retries; submit it again`,
      },
    });
    expect(JSON.stringify(answer.body)).not.toMatch(/timed? ?out|\/work\/|node_modules/);
  });

  it('answers an unknown id, a malformed one and another account’s alike with 404 in OpenAI’s shape', async () => {
    const app = await start();
    const owner = await app.account();
    const stranger = await app.account();
    const { body } = await create(app, owner.key, { model: 'echo', input: 'mine', background: true });
    const id = (body as ResponseObject).id;
    const foreign = await retrieve(app, stranger.key, id);
    const unknown = await retrieve(app, owner.key, `resp_${'A'.repeat(26)}`);
    expectOpenAiError(foreign, 404, 'not_found', 'invalid_request_error');
    expectOpenAiError(unknown, 404, 'not_found', 'invalid_request_error');
    expectOpenAiError(await retrieve(app, owner.key, 'nothing'), 404, 'not_found', 'invalid_request_error');
    expectOpenAiError(await retrieve(app, owner.key, 'x'.repeat(5_000)), 404, 'not_found', 'invalid_request_error');
    expectOpenAiError(await cancel(app, stranger.key, id), 404, 'not_found', 'invalid_request_error');
    // The stranger's cancel changed nothing.
    expect(await eventTypesOf(app, reqIdOf(id))).not.toContain('RequestCancelled');
  });
});

describe('POST /v1/responses without background', () => {
  it('waits for the result and answers the completed Response', async () => {
    const app = await start({ config: { models: [echo('echo', 50)] }, clock: systemClock });
    const { key } = await app.account();
    for (const background of [undefined, false]) {
      const answer = await create(app, key, { model: 'echo', input: 'wait for me', background });
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ status: 'completed', model: 'echo' });
      expect((answer.body as ResponseObject).output[0]?.content).toEqual([
        { type: 'output_text', text: 'wait for me', annotations: [] },
      ]);
    }
  });

  it('keeps waiting past the model’s timeout, through the retries, and answers only once the request is final', async () => {
    const app = await start({
      config: { models: [echo('sluggish', 60_000, 300)], processing: { concurrency: 1, maxAttempts: 2 } },
      clock: systemClock,
    });
    const { key } = await app.account();
    // Two attempts of 300 ms each with a 1 s backoff between them: never answered while queued or in progress.
    const answer = await create(app, key, { model: 'sluggish', input: 'too slow' });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ status: 'failed', output: [], error: { code: 'server_error' } });
    const reqId = reqIdOf((answer.body as ResponseObject).id);
    expect((await eventTypesOf(app, reqId)).filter((type) => type === 'RequestProcessingStarted')).toHaveLength(2);
  });

  it('answers a request that fails for good while waited for as a failed Response', async () => {
    const app = await start({ clock: systemClock });
    const { key } = await app.account();
    const answer = await create(app, key, { model: 'doomed', input: 'fails' });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ status: 'failed', error: { code: 'server_error' } });
  });
});

describe('Input of POST /v1/responses', () => {
  it('keeps a conversation as its messages, with instructions first as a system message, and echo answers the last user message', async () => {
    const app = await start();
    const { key } = await app.account();
    const answer = await create(app, key, {
      model: 'echo',
      background: true,
      instructions: 'Be brief.',
      input: [
        { role: 'user', content: 'first question' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'first answer' }] },
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'second' },
            { type: 'input_text', text: 'question' },
          ],
        },
      ],
      // Known OpenAI fields are accepted (metadata is kept: openaiMetadata.test.ts).
      temperature: 0.2,
      max_output_tokens: 100,
      metadata: { team: 'a' },
      store: true,
    });
    expect(answer.status).toBe(200);
    const reqId = reqIdOf((answer.body as ResponseObject).id);
    expect(JSON.parse((await app.store.reads.requestWithText(reqId))?.text ?? 'null').messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'first question' },
      { role: 'assistant', content: 'first answer' },
      { role: 'user', content: 'second\nquestion' },
    ]);
    await app.processor.idle();
    const done = (await retrieve(app, key, (answer.body as ResponseObject).id)).body as ResponseObject;
    expect(done.output[0]?.content[0]?.text).toBe('second\nquestion');
  });

  it('keeps a string input without instructions as a plain prompt', async () => {
    const app = await start();
    const { key } = await app.account();
    const answer = await create(app, key, { model: 'echo', input: 'just a prompt', background: true });
    expect((await app.store.reads.requestWithText(reqIdOf((answer.body as ResponseObject).id)))?.text).toBe(
      'just a prompt',
    );
  });

  it.each([
    [{ model: 'echo', input: 'x', stream: 'yes' }, 'stream', /true or false/],
    [
      { model: 'echo', input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] },
      'input[0].content[0].type',
      /input_image/,
    ],
    [
      { model: 'echo', input: [{ type: 'function_call_output', call_id: 'c', output: 'x' }] },
      'input[0].call_id',
      /no function_call with call_id "c"/,
    ],
    [{ model: 'echo', input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input[0].id', /store = false/],
    [{ model: 'echo', input: [{ role: 'robot', content: 'x' }] }, 'input[0].role', /role/],
    [{ model: 'echo', input: [] }, 'input', /empty/],
    [{ model: 'echo', input: '   ' }, 'input', /empty/],
    [{ model: 'echo', input: 42 }, 'input', /string or a list/],
    [{ model: 'echo' }, 'input', /required/],
    [{ input: 'x' }, 'model', /required/],
    [{ model: 7, input: 'x' }, 'model', /string/],
    [{ model: 'echo', input: 'x', background: 'yes' }, 'background', /true or false/],
    [{ model: 'echo', input: 'x', previous_response_id: 'resp_x' }, 'previous_response_id', /not supported/],
    [{ model: 'echo', input: 'x', tools: [{ type: 'web_search' }] }, 'tools[0].type', /function tools only/],
    [{ model: 'echo', input: 'x', instructions: 3 }, 'instructions', /string/],
  ])('refuses %j with 400 naming %s in param', async (body, param, message) => {
    const app = await start();
    const { key } = await app.account();
    const error = expectOpenAiError(await create(app, key, body), 400, 'invalid_request', 'invalid_request_error');
    expect(error.param).toBe(param);
    expect(error.message).toMatch(message);
  });

  it('refuses an unknown model with 404 model_not_found listing the known ones, and an input over the size limit with 400', async () => {
    const app = await start();
    const { key } = await app.account();
    const unknown = expectOpenAiError(
      await create(app, key, { model: 'gpt-9', input: 'x' }),
      404,
      'model_not_found',
      'invalid_request_error',
    );
    expect(unknown.message).toMatch(/echo, slow, doomed/);
    const long = [
      { role: 'user', content: 'x'.repeat(150) },
      { role: 'user', content: 'y'.repeat(150) },
    ];
    const tooLong = expectOpenAiError(
      await create(app, key, { model: 'echo', input: long }),
      400,
      'invalid_request',
      'invalid_request_error',
    );
    expect(tooLong.message).toMatch(/300 characters long; the maximum is 200/);
  });

  it('refuses a body that is not JSON, not an object, or of another Content-Type with 400, and one over the byte limit with 413', async () => {
    const app = await start();
    const { key } = await app.account();
    const raw = (body: string, headers: Record<string, string> = {}) =>
      call(app, 'POST', '/v1/responses', { key, body, headers });
    expectOpenAiError(await raw('{"model":'), 400, 'invalid_request', 'invalid_request_error');
    expectOpenAiError(await raw('[1,2]'), 400, 'invalid_request', 'invalid_request_error');
    expectOpenAiError(
      await raw('{"model":"echo","input":"x"}', { 'content-type': 'text/plain' }),
      400,
      'invalid_request',
      'invalid_request_error',
    );
    expectOpenAiError(
      await raw(JSON.stringify({ model: 'echo', input: 'x'.repeat(5_000) })),
      413,
      'invalid_request',
      'invalid_request_error',
    );
  });
});

describe('POST /v1/responses/{id}/cancel', () => {
  it('cancels a queued request: the Response says cancelled, it is never processed, and /v1/ai answers 404 saying so', async () => {
    const app = await start();
    const { key } = await app.account();
    await create(app, key, { model: 'slow', input: 'keeps the only worker busy', background: true });
    const waiting = (await create(app, key, { model: 'echo', input: 'never mind', background: true }))
      .body as ResponseObject;
    const answer = await cancel(app, key, waiting.id);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ id: waiting.id, object: 'response', status: 'cancelled', output: [] });
    expect(rateLimitOf(answer).policy).toBe('"polls";q=600;w=60');
    // Cancelling again answers the same; a retrieve shows it too.
    expect((await cancel(app, key, waiting.id)).body).toMatchObject({ status: 'cancelled' });
    expect((await retrieve(app, key, waiting.id)).body).toMatchObject({ status: 'cancelled', output: [] });
    expect(await eventTypesOf(app, reqIdOf(waiting.id))).toEqual(['RequestQueued', 'RequestCancelled']);
    const polled = await call(app, 'GET', `/v1/ai?req_id=${reqIdOf(waiting.id)}`, { key });
    expect(polled.status).toBe(404);
    expect(polled.body).toMatchObject({ error: { code: 'not_found', message: expect.stringMatching(/cancelled/) } });
  });

  it('cancels a request in progress, aborting its model call', async () => {
    const app = await start({ clock: systemClock });
    const { key } = await app.account();
    const busy = (await create(app, key, { model: 'slow', input: 'in progress', background: true }))
      .body as ResponseObject;
    expect((await retrieve(app, key, busy.id)).body).toMatchObject({ status: 'in_progress' });
    expect((await cancel(app, key, busy.id)).body).toMatchObject({ status: 'cancelled' });
    await app.processor.idle();
    expect(await eventTypesOf(app, reqIdOf(busy.id))).toEqual([
      'RequestQueued',
      'RequestProcessingStarted',
      'RequestCancelled',
    ]);
  });

  it('refuses to cancel a completed request with 400, and leaves it completed', async () => {
    const app = await start();
    const { key } = await app.account();
    const done = (await create(app, key, { model: 'echo', input: 'finished', background: true }))
      .body as ResponseObject;
    await app.processor.idle();
    const error = expectOpenAiError(await cancel(app, key, done.id), 400, 'invalid_request', 'invalid_request_error');
    expect(error.message).toMatch(/completed/);
    expect((await retrieve(app, key, done.id)).body).toMatchObject({ status: 'completed' });
  });
});

describe('Errors, authentication and limits on the OpenAI-compatible routes', () => {
  const routes: [string, string, unknown?][] = [
    ['GET', '/v1/models'],
    ['GET', '/v1/models/echo'],
    ['POST', '/v1/responses', { model: 'echo', input: 'x', background: true }],
    ['GET', '/v1/responses/resp_x'],
    ['POST', '/v1/responses/resp_x/cancel'],
  ];

  it('answers a missing, malformed or unknown key with 401 authentication_error and WWW-Authenticate on every route', async () => {
    const app = await start();
    const { key } = await app.account();
    for (const [method, path, body] of routes)
      for (const authorization of [undefined, `Basic ${key}`, 'Bearer sk_unknown']) {
        const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
        const answer = await call(app, method, path, { body, headers });
        expectOpenAiError(answer, 401, 'unauthorized', 'authentication_error');
        expect(answer.headers.get('www-authenticate')).toMatch(/^Bearer/);
        expect(JSON.stringify(answer.body)).not.toContain(key);
      }
  });

  it('answers a key of a suspended account with 403 permission_error, and a revoked key with 401 on the next call', async () => {
    const app = await start();
    const suspended = await app.account();
    const revoked = await app.account();
    await Effect.runPromise(app.accounts.suspend(suspended.accountId));
    await Effect.runPromise(app.accounts.revokeKey(revoked.keyId));
    for (const [method, path, body] of routes) {
      expectOpenAiError(
        await call(app, method, path, { key: suspended.key, body }),
        403,
        'forbidden',
        'permission_error',
      );
      expectOpenAiError(
        await call(app, method, path, { key: revoked.key, body }),
        401,
        'unauthorized',
        'authentication_error',
      );
    }
  });

  it('spends a submit on every create, even a refused one, and a poll on every retrieve, cancel and model list', async () => {
    const app = await start();
    const { key } = await app.account('free');
    expect(rateLimitOf(await create(app, key, { model: 'echo', input: 'x', background: true })).remaining).toBe(59);
    expect(rateLimitOf(await create(app, key, { model: 'nope', input: 'x' })).remaining).toBe(58);
    expect(rateLimitOf(await call(app, 'GET', '/v1/models', { key })).remaining).toBe(599);
    expect(rateLimitOf(await retrieve(app, key, 'resp_unknown')).remaining).toBe(598);
    expect(rateLimitOf(await cancel(app, key, 'resp_unknown')).remaining).toBe(597);
    // The same account's budgets as /v1/ai: a submit there comes out of the same count.
    const posted = await call(app, 'POST', '/v1/ai', { key, body: { model: 'echo', prompt: 'x' } });
    expect(rateLimitOf(posted).remaining).toBe(57);
  });

  it('answers 429 rate_limit_error with Retry-After once the submits are spent, before looking at the body', async () => {
    const plans = { ...defaultPlans, free: { ...defaultPlans.free, submitsPerMinute: 2 } };
    const app = await start({ config: { plans } });
    const { key } = await app.account('free');
    await create(app, key, { model: 'echo', input: 'a', background: true });
    await create(app, key, { model: 'echo', input: 'b', background: true });
    const limited = await create(app, key, { model: 'not even a model' });
    expectOpenAiError(limited, 429, 'rate_limited', 'rate_limit_error');
    expect(limited.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
    expect(rateLimitOf(limited)).toEqual({ policy: '"submits";q=2;w=60', remaining: 0 });
  });

  it('checks auth before the input: a bad key with a bad body answers 401', async () => {
    const app = await start();
    const answer = await call(app, 'POST', '/v1/responses', { key: 'sk_nope', body: '{not json' });
    expectOpenAiError(answer, 401, 'unauthorized', 'authentication_error');
  });

  it('answers another method with 405 and Allow, and an unknown path under the face with 404, in OpenAI’s shape', async () => {
    const app = await start();
    const { key } = await app.account();
    const wrong = await call(app, 'DELETE', '/v1/responses/resp_x', { key });
    expectOpenAiError(wrong, 405, 'method_not_allowed', 'invalid_request_error');
    expect(wrong.headers.get('allow')).toBe('GET');
    expect((await call(app, 'GET', '/v1/responses', { key })).headers.get('allow')).toBe('POST');
    expect((await call(app, 'GET', '/v1/responses/resp_x/cancel', { key })).headers.get('allow')).toBe('POST');
    expect((await call(app, 'PUT', '/v1/models', { key })).headers.get('allow')).toBe('GET');
    for (const path of ['/v1/responses/resp_x/input_items', '/v1/models/a/b', '/v1/responses/a/b/c'])
      expectOpenAiError(await call(app, 'GET', path, { key }), 404, 'not_found', 'invalid_request_error');
  });

  it('answers 503 server_error with Retry-After while the server is stopping', async () => {
    const app = await start();
    const { key } = await app.account();
    app.stopAccepting();
    for (const [method, path, body] of routes) {
      const answer = await call(app, method, path, { key, body });
      expectOpenAiError(answer, 503, 'server_error', 'server_error');
      expect(answer.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
    }
  });

  it('keeps /v1/ai’s own error shape on /v1/ai', async () => {
    const app = await start();
    const answer = await call(app, 'GET', '/v1/ai?req_id=x');
    expect(answer.status).toBe(401);
    expect(answer.body).toEqual({ error: { code: 'unauthorized', message: expect.any(String) } });
  });
});

describe('Idempotency-Key on POST /v1/responses', () => {
  const queuedCount = async (app: TestApp, accountId: string) =>
    (await loggedEvents(app)).filter((e) => e.type === 'RequestQueued' && e.accountId === accountId).length;

  it('answers a repeat with the same key and body with the same Response, marked Idempotent-Replayed, creating nothing', async () => {
    const app = await start();
    const { key, accountId } = await app.account();
    const body = { model: 'echo', input: 'only once', background: true };
    const first = await create(app, key, body, { 'idempotency-key': 'k-1' });
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await create(app, key, body, { 'idempotency-key': 'k-1' });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((again.body as ResponseObject).id).toBe((first.body as ResponseObject).id);
    expect(await queuedCount(app, accountId)).toBe(1);
  });

  it('makes exactly one request from many concurrent repeats', async () => {
    const app = await start();
    const { key, accountId } = await app.account('scale');
    const body = { model: 'echo', input: 'at once', background: true };
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => create(app, key, body, { 'idempotency-key': 'same' })),
    );
    expect(new Set(answers.map((a) => (a.body as ResponseObject).id)).size).toBe(1);
    expect(answers.filter((a) => a.headers.get('idempotent-replayed') === 'true')).toHaveLength(19);
    expect(await queuedCount(app, accountId)).toBe(1);
  });

  it('refuses the same key with another body, or the same key first used on /v1/ai, with 422 idempotency_key_reused', async () => {
    const app = await start();
    const { key, accountId } = await app.account();
    await create(app, key, { model: 'echo', input: 'a', background: true }, { 'idempotency-key': 'k' });
    const other = await create(app, key, { model: 'echo', input: 'b', background: true }, { 'idempotency-key': 'k' });
    expectOpenAiError(other, 422, 'idempotency_key_reused', 'invalid_request_error');
    await call(app, 'POST', '/v1/ai', {
      key,
      body: { model: 'echo', prompt: 'a' },
      headers: { 'idempotency-key': 'ai-key' },
    });
    const crossed = await create(app, key, { model: 'echo', input: 'a' }, { 'idempotency-key': 'ai-key' });
    expectOpenAiError(crossed, 422, 'idempotency_key_reused', 'invalid_request_error');
    expect(await queuedCount(app, accountId)).toBe(2);
  });

  it('keeps the keys of different accounts apart', async () => {
    const app = await start();
    const one = await app.account();
    const two = await app.account();
    const body = { model: 'echo', input: 'same words', background: true };
    const a = await create(app, one.key, body, { 'idempotency-key': 'shared' });
    const b = await create(app, two.key, body, { 'idempotency-key': 'shared' });
    expect((a.body as ResponseObject).id).not.toBe((b.body as ResponseObject).id);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
  });

  it('refuses an Idempotency-Key that is empty, too long or not visible ASCII with 400', async () => {
    const app = await start();
    const { key } = await app.account();
    for (const value of ['x'.repeat(256), 'has space', 'ünïcode']) {
      const answer = await create(app, key, { model: 'echo', input: 'x' }, { 'idempotency-key': value });
      expectOpenAiError(answer, 400, 'invalid_request', 'invalid_request_error');
    }
  });
});
