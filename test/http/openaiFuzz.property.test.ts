import { request as httpRequest } from 'node:http';
import { Effect } from 'effect';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { responseObjectSchema } from '../../src/adapters/http/openai/responseObjectSchema.js';
import { responseStreamEventSchema } from '../../src/adapters/http/openai/responseStreamEventSchema.js';
import { sseFramesOf } from '../support/sseFrames.js';
import { listen, startTestApp, type TestApp } from '../support/testApp.js';
import { startToolUpstream } from './support/toolUpstream.js';

/**
 * Random HTTP thrown at the OpenAI-compatible routes (contracts 11 and 13), in process and over a socket: bodies
 * (streams, tools, formats, settings, tool-call items, references), ids, queries (`stream`, `starting_after`),
 * Idempotency-Keys and other headers. Whatever comes in, the answer has a contract status; an error is in OpenAI's
 * shape (`{"error": {"message", "type", "param", "code"}}`) with the code and type of its status; a success is the
 * object its route answers, or a stream of numbered Response events that ends with a final one; nothing leaks
 * internals or key material, and nothing makes the service answer 500.
 */

const codeFor: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'invalid_request',
  422: 'idempotency_key_reused',
  429: 'rate_limited',
  431: 'invalid_request',
  503: 'server_error',
};
const typeFor = (status: number) =>
  status === 401
    ? 'authentication_error'
    : status === 403
      ? 'permission_error'
      : status === 429
        ? 'rate_limit_error'
        : status >= 500
          ? 'server_error'
          : 'invalid_request_error';
/** 431 only comes from Node's parser over a socket (headers over 16 KB), in /v1/ai's shape: it never reaches a route. */
const allowedStatuses = [200, ...Object.keys(codeFor).map(Number)].filter((status) => status !== 431);

/** Characters a header value may hold on the wire (a ByteString without control characters or DEL). */
const headerValue = fc.string({
  unit: fc.integer({ min: 0x20, max: 0xfe }).map((c) => String.fromCharCode(c === 0x7f ? 0xff : c)),
});

type Known = {
  key: string;
  suspendedKey: string;
  revokedKey: string;
  ownRespId: string;
  ownReqId: string;
  foreignRespId: string;
};

/** A path segment that is not `.` or `..` once decoded (those would leave the face's paths). */
const notDotSegment = (segment: string) => {
  let decoded = segment;
  try {
    decoded = decodeURIComponent(segment);
  } catch {}
  return decoded !== '.' && decoded !== '..' && segment !== '';
};

const arbitraries = (known: Known) => {
  const id = fc
    .oneof(
      { weight: 3, arbitrary: fc.constantFrom(known.ownRespId, known.ownReqId, known.foreignRespId, 'echo') },
      fc.constantFrom('%', '%zz', '%E2%82', '%00', 'resp_', 'req_', 'msg_x', '%2F', 'resp_%2e%2e', 'a%20b'),
      fc.string({ maxLength: 20 }).map(encodeURIComponent),
      fc.base64String({ maxLength: 40 }).map((s) => `resp_${s.replace(/\//g, '_').replace(/\+/g, '-')}`),
      fc.webSegment(),
      fc.nat(3_000).map((n) => `resp_${'A'.repeat(n)}`),
    )
    .filter(notDotSegment);
  const anyPath = fc.oneof(
    fc.constantFrom('/v1/responses', '/v1/models'),
    id.map((i) => `/v1/responses/${i}`),
    id.map((i) => `/v1/responses/${i}/cancel`),
    id.map((i) => `/v1/models/${i}`),
    fc
      .tuple(fc.constantFrom('/v1/responses', '/v1/models'), fc.array(id, { minLength: 1, maxLength: 3 }))
      .map(([prefix, ids]) => `${prefix}/${ids.join('/')}`),
    fc.constantFrom('/v1/responses/', '/v1/models/', '/v1/responses/x/cancel/', '/v1/responses/x/input_items'),
  );
  const anyMethod = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom('POST', 'GET') },
    fc.constantFrom('PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'),
  );
  /** Mostly a route with its own method; sometimes any method on any path under the face. */
  const target = fc.oneof(
    { weight: 5, arbitrary: fc.constant({ method: 'POST', path: '/v1/responses' }) },
    { weight: 3, arbitrary: id.map((i) => ({ method: 'GET', path: `/v1/responses/${i}` })) },
    { weight: 2, arbitrary: id.map((i) => ({ method: 'POST', path: `/v1/responses/${i}/cancel` })) },
    { weight: 1, arbitrary: fc.constant({ method: 'GET', path: '/v1/models' }) },
    { weight: 1, arbitrary: id.map((i) => ({ method: 'GET', path: `/v1/models/${i}` })) },
    { weight: 3, arbitrary: fc.record({ method: anyMethod, path: anyPath }) },
  );
  const query = fc.option(
    fc.oneof(
      fc.constantFrom('?stream=true', '?stream=false', '?include[]=x', '?starting_after=1', '?limit=5', '?stream=1'),
      fc
        .tuple(
          fc.constantFrom('true', 'false', 'TRUE', ''),
          fc.oneof(fc.nat(20).map(String), fc.constantFrom('-1', '1.5', '', 'x', '9'.repeat(12), '%31')),
        )
        .map(([stream, after]) => `?stream=${stream}&starting_after=${after}`),
      fc.webQueryParameters().map((q) => `?${q}`),
    ),
    { nil: '' },
  );
  const authorization = fc.option(
    fc.oneof(
      { weight: 10, arbitrary: fc.constant(`Bearer ${known.key}`) },
      fc.constantFrom(
        `bearer ${known.key}`,
        known.key,
        `Basic ${known.key}`,
        `Bearer ${known.suspendedKey}`,
        `Bearer ${known.revokedKey}`,
        `Bearer ${known.key.slice(0, -1)}`,
        'Bearer',
      ),
      headerValue.map((v) => `Bearer ${v}`),
    ),
    { nil: undefined },
  );
  const contentType = fc.option(
    fc.oneof(
      { weight: 12, arbitrary: fc.constant('application/json') },
      fc.constantFrom('application/json; charset=utf-8', 'text/plain', 'multipart/form-data; boundary=x'),
      headerValue,
    ),
    { nil: undefined },
  );
  const idempotencyKey = fc.option(
    fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom('key-1', 'key-2', 'key-3') },
      fc.stringMatching(/^[\x21-\x7e]{1,255}$/),
      fc.constantFrom('x'.repeat(256), 'has space', ' ', 'tab\there'),
      headerValue,
    ),
    { nil: undefined, freq: 2 },
  );
  const anyJson = fc.jsonValue({ maxDepth: 3 });
  const text = fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('', '  ', '\ud800', 'x'.repeat(250)));
  const part = fc.oneof(
    fc.record({ type: fc.constantFrom('input_text', 'output_text'), text }),
    fc.record(
      { type: fc.oneof(fc.constantFrom('input_image', 'input_file', 'refusal'), anyJson), text: anyJson },
      { requiredKeys: [] },
    ),
    anyJson,
  );
  const message = fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record(
        {
          type: fc.constant('message'),
          role: fc.constantFrom('user', 'assistant', 'system', 'developer'),
          content: fc.oneof(text, fc.array(part, { maxLength: 3 })),
        },
        { requiredKeys: ['role', 'content'] },
      ),
    },
    fc.record(
      { type: anyJson, role: fc.oneof(fc.string({ maxLength: 10 }), anyJson), content: anyJson },
      { requiredKeys: [] },
    ),
    anyJson,
  );
  const name = fc.oneof(fc.constantFrom('get_weather', 'f', '', 'a b', 'x'.repeat(65)), fc.string({ maxLength: 8 }));
  const callId = fc.oneof(fc.constantFrom('call_1', 'call_2', ''), fc.string({ maxLength: 8 }), anyJson);
  const item = fc.oneof(
    {
      weight: 2,
      arbitrary: fc.record(
        { type: fc.constant('function_call'), call_id: callId, name, arguments: fc.oneof(fc.json(), anyJson) },
        { requiredKeys: ['type'] },
      ),
    },
    {
      weight: 2,
      arbitrary: fc.record(
        { type: fc.constant('function_call_output'), call_id: callId, output: fc.oneof(text, fc.array(part)) },
        { requiredKeys: ['type'] },
      ),
    },
    fc.record(
      {
        type: fc.constant('item_reference'),
        id: fc.oneof(
          fc.constantFrom(`msg_${known.ownRespId.slice(5)}`, `msg_${known.foreignRespId.slice(5)}`, 'msg_', 'fc__0'),
          fc.string({ maxLength: 12 }),
          anyJson,
        ),
      },
      { requiredKeys: ['type'] },
    ),
    fc.record({ type: fc.constantFrom('reasoning', 'computer_call', 'web_search_call'), id: anyJson }),
  );
  const tool = fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record(
        {
          type: fc.constant('function'),
          name,
          description: fc.oneof(text, anyJson),
          parameters: fc.oneof(fc.constant({ type: 'object', properties: {} }), anyJson),
          strict: fc.oneof(fc.boolean(), anyJson),
        },
        { requiredKeys: ['type', 'name'] },
      ),
    },
    fc.record({ type: fc.constantFrom('web_search_preview', 'file_search', 'custom', 'mcp') }),
    anyJson,
  );
  const format = fc.oneof(
    fc.constantFrom({ type: 'text' }, { type: 'json_object' }, { type: 'xml' }),
    fc.record(
      {
        type: fc.constant('json_schema'),
        name,
        schema: fc.oneof(fc.constant({ type: 'object' }), anyJson),
        strict: anyJson,
      },
      { requiredKeys: ['type'] },
    ),
    anyJson,
  );
  const create = fc.record(
    {
      model: fc.oneof({ weight: 4, arbitrary: fc.constantFrom('echo', 'gpt') }, fc.string({ maxLength: 10 }), anyJson),
      input: fc.oneof(text, fc.array(fc.oneof(message, item), { maxLength: 4 }), anyJson),
      instructions: fc.oneof(text, anyJson),
      background: fc.oneof({ weight: 4, arbitrary: fc.boolean() }, anyJson),
      stream: fc.oneof({ weight: 4, arbitrary: fc.boolean() }, anyJson),
      tools: fc.oneof(fc.constant([]), fc.array(tool, { maxLength: 2 }), anyJson),
      tool_choice: fc.oneof(
        fc.constantFrom('none', 'auto', 'required', { type: 'function', name: 'f' }, { type: 'allowed_tools' }),
        anyJson,
      ),
      parallel_tool_calls: fc.oneof(fc.boolean(), anyJson),
      text: fc.oneof(
        fc.record({ format, verbosity: fc.oneof(fc.constant(null), anyJson) }, { requiredKeys: [] }),
        anyJson,
      ),
      previous_response_id: fc.oneof(fc.constant(null), fc.string({ maxLength: 10 })),
      temperature: fc.oneof(fc.double({ min: -1, max: 3, noNaN: true }), anyJson),
      top_p: fc.oneof(fc.double({ min: -1, max: 2, noNaN: true }), anyJson),
      max_output_tokens: fc.oneof(fc.integer({ min: -2, max: 100 }), anyJson),
      top_logprobs: fc.oneof(fc.nat(5), anyJson),
      include: fc.oneof(fc.constant(['message.output_text.logprobs']), fc.array(fc.string({ maxLength: 8 })), anyJson),
      user: fc.oneof(text, anyJson),
      metadata: anyJson,
    },
    { requiredKeys: [] },
  );
  const valid = fc.record(
    {
      model: fc.constant('echo'),
      input: fc.string({ minLength: 1, maxLength: 40 }).filter((s) => s.trim() !== '' && !/\p{Cs}/u.test(s)),
      background: fc.boolean(),
      stream: fc.boolean(),
      temperature: fc.double({ min: 0, max: 2, noNaN: true }),
    },
    { requiredKeys: ['model', 'input', 'background'] },
  );
  /** A valid body with one of the settings or items set at random: every one reaches the parser's deep checks. */
  const oneSetting = fc
    .tuple(
      valid,
      fc.constantFrom('echo', 'gpt'),
      fc.oneof(
        fc.record({ tools: fc.array(tool, { maxLength: 2 }) }),
        fc.record({
          tools: fc.constant([{ type: 'function', name: 'f' }]),
          tool_choice: create.map((c) => c.tool_choice),
        }),
        fc.record({ text: fc.record({ format }, { requiredKeys: [] }) }),
        fc.record({ temperature: fc.double({ min: -1, max: 3 }) }),
        fc.record({ top_p: fc.double({ min: -1, max: 2 }) }),
        fc.record({ max_output_tokens: fc.oneof(fc.integer({ min: -2, max: 100 }), anyJson) }),
        fc.record({ parallel_tool_calls: fc.oneof(fc.boolean(), anyJson) }),
        fc.record({ input: fc.array(fc.oneof(message, item), { minLength: 1, maxLength: 4 }) }),
        fc.record({
          input: fc.constant([
            { role: 'user', content: 'x' },
            { type: 'function_call', call_id: 'call_1', name: 'f', arguments: '{}' },
            { type: 'function_call_output', call_id: 'call_1', output: 'ok' },
          ]),
        }),
        fc.record({ include: create.map((c) => c.include), top_logprobs: fc.nat(3) }, { requiredKeys: [] }),
      ),
    )
    .map(([base, model, setting]) => JSON.stringify({ ...base, model, ...setting }));
  const body = fc.option(
    fc.oneof(
      { weight: 8, arbitrary: valid.map((value) => JSON.stringify(value)) },
      { weight: 8, arbitrary: oneSetting },
      { weight: 5, arbitrary: create.map((value) => JSON.stringify(value)) },
      anyJson.map((value) => JSON.stringify(value)),
      fc.string({ maxLength: 100 }),
      fc.uint8Array({ maxLength: 200 }),
      fc.string({ minLength: 900, maxLength: 3_000 }),
      fc.constant('{"model": "echo", "input": "unterminated'),
    ),
    { nil: undefined },
  );
  return fc
    .record({ target, query, authorization, contentType, idempotencyKey, body })
    .map(({ target: { method, path }, ...rest }) => ({ method, path, ...rest }));
};

type Case = ReturnType<typeof arbitraries> extends fc.Arbitrary<infer T> ? T : never;

const initOf = (c: Case): RequestInit => {
  const headers = new Headers();
  if (c.authorization !== undefined) headers.set('authorization', c.authorization);
  if (c.contentType !== undefined) headers.set('content-type', c.contentType);
  if (c.idempotencyKey !== undefined) headers.set('idempotency-key', c.idempotencyKey);
  const bodyAllowed = !['GET', 'HEAD'].includes(c.method);
  return { method: c.method, headers, body: bodyAllowed ? c.body : undefined };
};

/** The route a call reaches and the budget it spends, when it is one of the face's routes with its method. */
const routeOf = (method: string, pathname: string): { name: string; budget: 'submits' | 'polls' } | undefined => {
  if (malformed(pathname)) return undefined;
  // A trailing slash reaches the same route; an empty segment inside the path none.
  const segments = pathname.replace(/\/$/, '').split('/').slice(1);
  if (segments.includes('')) return undefined;
  const [v1, face, id, action, ...rest] = segments;
  if (v1 !== 'v1' || rest.length > 0) return undefined;
  if (face === 'models' && action === undefined && method === 'GET')
    return { name: id === undefined ? 'models.list' : 'models.retrieve', budget: 'polls' };
  if (face !== 'responses') return undefined;
  if (id === undefined) return method === 'POST' ? { name: 'responses.create', budget: 'submits' } : undefined;
  if (action === undefined) return method === 'GET' ? { name: 'responses.retrieve', budget: 'polls' } : undefined;
  if (action === 'cancel' && method === 'POST') return { name: 'responses.cancel', budget: 'polls' };
  return undefined;
};

/** A path with bad percent-encoding: refused before routing (400), so it reaches no route and spends nothing. */
const malformed = (pathname: string) => {
  try {
    decodeURI(pathname);
    return false;
  } catch {
    return true;
  }
};

type Seen = { readonly status: number; readonly headers: Headers; readonly text: string };

const enterprise = { submits: 30_000, polls: 300_000 };

/** A Response object as the SDKs read it, and as the OpenAPI document's schema says. */
const expectResponseObject = (body: Record<string, unknown>, context: string) => {
  const parsed = responseObjectSchema.safeParse(body);
  expect(parsed.success ? [] : parsed.error.issues, context).toEqual([]);
  expect(['echo', 'gpt'], context).toContain(body.model);
  // Usage once completed (echo counts words, the upstream tells it), none before.
  if (body.status === 'completed') expect(body.usage, context).not.toBeNull();
  else expect(body.usage, context).toBeNull();
  const output = body.output as unknown[];
  if (body.status === 'completed') expect(output.length, context).toBeGreaterThan(0);
  else expect(output, context).toEqual([]);
  if (body.status === 'failed') expect(body.error, context).toMatchObject({ code: 'server_error' });
  else expect(body.error, context).toBeNull();
};

const finalEvents = ['response.completed', 'response.failed', 'error'];

/**
 * A Response stream: only where a stream was asked for (a create with `stream: true`, a retrieve with `stream=true`),
 * events numbered upwards past `starting_after`, each with its type as its name, ending with a final event (every
 * request here is answered at once by `echo`, or cancelled).
 */
const expectResponseStream = (text: string, c: Case, pathname: string, context: string) => {
  const route = routeOf(c.method, pathname);
  expect(['responses.create', 'responses.retrieve'], context).toContain(route?.name);
  if (route?.name === 'responses.retrieve') expect(c.query, context).toMatch(/stream=true/);
  else expect(JSON.parse(String(c.body)), context).toMatchObject({ stream: true });
  // A create takes no query; a retrieve stream starts after `starting_after`.
  // Read as the server reads it: decoded (`%31` is 1), the last of several.
  const afterValue = new URLSearchParams(c.query).getAll('starting_after').at(-1);
  const after =
    route?.name === 'responses.retrieve' && afterValue !== undefined && /^\d{1,9}$/.test(afterValue)
      ? afterValue
      : undefined;
  const frames = sseFramesOf(text);
  const events = frames.flatMap((frame) => (frame.kind === 'event' ? [frame] : []));
  let last = after === undefined ? -1 : Number(after);
  for (const { event, data } of events) {
    expect(event, context).toBe(data.type);
    const parsed = responseStreamEventSchema.safeParse(data);
    expect(parsed.success ? [] : parsed.error.issues, context).toEqual([]);
    expect(data.sequence_number, context).toBeGreaterThan(last);
    last = data.sequence_number as number;
  }
  if (events.length > 0) expect(finalEvents, context).toContain(events.at(-1)?.data.type);
  else expect(after, context).toBeDefined();
  if (after === undefined) expect(events[0]?.data.type, context).toBe('response.created');
};

const checkSeen = (label: string, c: Case, pathname: string, seen: Seen, known: Known, allowed = allowedStatuses) => {
  const { status, headers, text } = seen;
  const context = `${label} ${c.method} ${pathname.slice(0, 200)} -> ${status} ${text.slice(0, 300)}`;
  expect(allowed, context).toContain(status);
  expect(text, context).not.toContain(known.key);
  expect(text, context).not.toMatch(/node_modules|\/work\/|\n\s+at /);
  if (c.method === 'HEAD' && text === '') return;
  if (headers.get('content-type')?.startsWith('text/event-stream')) {
    expect(status, context).toBe(200);
    expectResponseStream(text, c, pathname, context);
    return;
  }
  expect(headers.get('content-type'), context).toMatch(/^application\/json\b/);
  const body = JSON.parse(text) as Record<string, unknown>;
  // Over 16 KB of headers, Node's parser answers before any route: that one answer keeps /v1/ai's shape.
  if (status === 431) return;
  const route = routeOf(c.method, pathname);
  if (status === 200) {
    expect(route, context).toBeDefined();
    if (route?.name === 'models.list') expect(body, context).toMatchObject({ object: 'list', data: expect.any(Array) });
    else if (route?.name === 'models.retrieve')
      expect(body, context).toMatchObject({ id: 'echo', object: 'model', owned_by: 'airs' });
    else expectResponseObject(body, context);
    if (route?.name === 'responses.cancel') expect(body.status, context).toBe('cancelled');
  } else {
    expect(Object.keys(body), context).toEqual(['error']);
    const error = body.error as Record<string, unknown>;
    expect(Object.keys(error).sort(), context).toEqual(['code', 'message', 'param', 'type']);
    // A 404 is `not_found`, or OpenAI's `model_not_found` for a model that does not exist (contract 21).
    expect(error.code, context).toBe(
      status === 404 && error.code === 'model_not_found' && error.param === 'model'
        ? 'model_not_found'
        : codeFor[status],
    );
    expect(error.type, context).toBe(typeFor(status));
    expect(typeof error.message, context).toBe('string');
    expect(error.param === null || typeof error.param === 'string', context).toBe(true);
    if (status === 405) expect(headers.get('allow'), context).toMatch(/^(GET|POST)$/);
    if (status === 401) expect(headers.get('www-authenticate'), context).toMatch(/^Bearer/);
    if (status === 429 || status === 503) expect(headers.get('retry-after'), context).toMatch(/^[1-9][0-9]*$/);
  }
  // Every answer past authentication on a route spends its budget and says so.
  if (route !== undefined && ![401, 403, 503].includes(status)) {
    expect(headers.get('ratelimit-policy'), context).toBe(`"${route.budget}";q=${enterprise[route.budget]};w=60`);
    expect(headers.get('ratelimit'), context).toMatch(new RegExp(`^"${route.budget}";r=\\d+;t=\\d+$`));
  }
};

/**
 * One call over a real socket with node:http, which sends header values as given (fetch's undici refuses some, such as
 * an empty one, before sending anything).
 */
const overSocket = (url: string, c: Case) =>
  new Promise<Seen>((resolve, reject) => {
    const init = initOf(c);
    const body =
      init.body === undefined || init.body === null ? undefined : Buffer.from(init.body as string | Uint8Array);
    const headers: Record<string, string> = Object.fromEntries(new Headers(init.headers).entries());
    if (body !== undefined) headers['content-length'] = String(body.length);
    const call = httpRequest(`${url}${c.path}${c.query}`, { method: c.method, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => {
        const answerHeaders = new Headers();
        for (const [name, value] of Object.entries(response.headers))
          if (value !== undefined) answerHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
        resolve({ status: response.statusCode ?? 0, headers: answerHeaders, text: Buffer.concat(chunks).toString() });
      });
    });
    call.on('error', reject);
    call.end(body);
  });

/** The path as the server sees it: the WHATWG URL parser's, as fetch sends it. */
const pathnameOf = (c: Case) => new URL(`${c.path}${c.query}`, 'http://airs.test').pathname;

describe('the OpenAI-compatible routes under random input', () => {
  let app: TestApp;
  let known: Known;
  let server: Awaited<ReturnType<typeof listen>>;
  let upstream: Awaited<ReturnType<typeof startToolUpstream>>;

  beforeAll(async () => {
    upstream = await startToolUpstream();
    app = await startTestApp({
      config: {
        models: [
          { id: 'echo', provider: 'echo', delayMs: 0, timeoutMs: 60_000 },
          {
            id: 'gpt',
            provider: 'openai',
            baseUrl: upstream.baseUrl,
            upstreamModel: 'up',
            timeoutMs: 60_000,
            maxRetries: 0,
          },
        ],
        maxBodyBytes: 1024,
        maxPromptChars: 200,
      },
    });
    server = await listen(app);
    const owner = await app.account('enterprise');
    const stranger = await app.account('enterprise');
    const suspended = await app.account();
    const revoked = await app.account();
    await Effect.runPromise(app.accounts.suspend(suspended.accountId));
    await Effect.runPromise(app.accounts.revokeKey(revoked.keyId));
    const created = async (key: string) => {
      const answer = await app.call('POST', '/v1/responses', {
        key,
        body: { model: 'echo', input: 'seed', background: true },
      });
      return ((await answer.json()) as { id: string }).id;
    };
    const ownRespId = await created(owner.key);
    known = {
      key: owner.key,
      suspendedKey: suspended.key,
      revokedKey: revoked.key,
      ownRespId,
      ownReqId: `req_${ownRespId.slice('resp_'.length)}`,
      foreignRespId: await created(stranger.key),
    };
    await app.processor.idle();
  });
  afterAll(async () => {
    await server?.close();
    await app?.stop();
    await upstream?.close();
  });

  it('answers every random call in process with a contract status, OpenAI’s error shape or the route’s object, never a 500', async () => {
    await fc.assert(
      fc.asyncProperty(arbitraries(known), async (c) => {
        const response = await app.http.request(`http://airs.test${c.path}${c.query}`, initOf(c));
        const seen = { status: response.status, headers: response.headers, text: await response.text() };
        checkSeen('in-process', c, pathnameOf(c), seen, known);
      }),
      { numRuns: 300 },
    );
  }, 120_000);

  it('answers every random call over a socket the same way', async () => {
    await fc.assert(
      fc.asyncProperty(arbitraries(known), async (c) => {
        checkSeen('socket', c, pathnameOf(c), await overSocket(server.url, c), known, [...allowedStatuses, 431]);
      }),
      { numRuns: 150 },
    );
  }, 120_000);

  it('still creates, retrieves and completes a Response after the random calls', async () => {
    const created = await app.call('POST', '/v1/responses', {
      key: known.key,
      body: { model: 'echo', input: 'still here', background: true },
    });
    expect(created.status).toBe(200);
    const { id } = (await created.json()) as { id: string };
    await app.processor.idle();
    const retrieved = await app.call('GET', `/v1/responses/${id}`, { key: known.key });
    expect(retrieved.status).toBe(200);
    expect(await retrieved.json()).toMatchObject({
      id,
      status: 'completed',
      output: [{ content: [{ type: 'output_text', text: 'still here' }] }],
    });
  });
});
