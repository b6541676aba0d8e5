import { Writable } from 'node:stream';
import fc from 'fast-check';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { requestIdOf } from '../../src/adapters/http/openai/responseObject.js';
import { MemoryStoreLayer, openMemoryStore } from '../../src/adapters/memory/MemoryStore.js';
import { idForMessage } from '../../src/domain/identifiers.js';
import type { ManualClock } from '../../src/ports/Clock.js';
import { randomIds } from '../../src/ports/Ids.js';
import { formTokensOf } from '../support/dashboardForm.js';
import { stopTestCluster, testCluster } from '../support/postgres.js';
import { startTestApp, type TestApp, type TestAppOptions } from '../support/testApp.js';

/**
 * Product contract 18, "Inputs that cannot be ids are not looked up": text that cannot be an id airs issued is
 * answered 404 at once, the same on every store, and text with control characters in a login or signup field answers
 * as a wrong login or a 400. PostgreSQL refuses NUL in text, so on it each of these was a 500 with an error-level
 * stack in the log; LMDB and memory answered them. Nothing a client sends is logged at error level here.
 */

type LogLine = { readonly level: number; readonly msg?: string; readonly err?: { stack?: string } };

/** An app on one store, with its log lines kept. */
type StoreCase = { readonly name: string; readonly options: () => Promise<TestAppOptions> };

const stores: readonly StoreCase[] = [
  { name: 'LMDB', options: async () => ({ store: 'lmdb' }) },
  { name: 'memory', options: async () => ({ store: 'memory' }) },
  {
    name: 'PostgreSQL',
    options: async () => ({
      config: { store: { url: await (await testCluster()).createDatabase(), urlFrom: 'test' } },
    }),
  },
];

const models = [{ id: 'echo', provider: 'echo', delayMs: 0, timeoutMs: 60_000 }] as const;
const password = 'correct horse battery staple';

/** Texts that cannot be request ids (each as it is meant; the path and query carry them percent-encoded). */
const notIds: readonly (readonly [string, string])[] = [
  ['a NUL and a quote', "\u0000'"],
  ['req_ and a NUL and a quote', "req_\u0000'"],
  ['req_ and a body one character short', `req_${'a'.repeat(33)}`],
  ['req_ and characters outside base64url', `req_${'a'.repeat(30)}%2F.!`],
  ['SQL', "req_' OR '1'='1'; DROP TABLE requests; --"],
  ['10,000 characters', `req_${'a'.repeat(10_000)}`],
  ['unicode', `req_${'ü😀'.repeat(11)}`],
  ['control characters in the body of a well-formed length', `req_${'a'.repeat(32)}\u001b\u0000`],
];

const withResp = (text: string) => text.replace(/^req_/, 'resp_');

describe.each(stores)('Inputs that cannot be ids, on $name', ({ options }) => {
  let app: TestApp;
  let lines: LogLine[];
  let key: string;
  let accountId: string;

  beforeAll(async () => {
    lines = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line) as LogLine);
        done();
      },
    });
    const base = await options();
    app = await startTestApp({
      ...base,
      config: { ...base.config, models: [...models] },
      logger: pino({ level: 'debug' }, sink),
    });
    ({ key, accountId } = await app.account('enterprise'));
  }, 60_000);
  afterAll(() => app?.stop());
  afterEach(() => {
    // Nothing a client sent is a fault: no line at error level or above, and no stack in any line.
    const faults = lines.filter((line) => line.level >= 50 || line.err?.stack !== undefined);
    lines.length = 0;
    expect(faults).toEqual([]);
  });

  const get = (path: string) => app.call('GET', path, { key });
  const post = (path: string, body?: unknown, headers?: Record<string, string>) =>
    app.call('POST', path, { key, body, headers });

  /** A 404 answer: its status, its body with the id as the message shows it made `<id>`, its stable headers. */
  const notFound = async (answer: Response, shownId: string) => {
    const body = await answer.text();
    const headers = [...answer.headers].filter(([name]) => name !== 'date' && !name.startsWith('ratelimit'));
    return { status: answer.status, body: body.split(JSON.stringify(shownId).slice(1, -1)).join('<id>'), headers };
  };
  /** A response id as the OpenAI face's messages show it: the request's id, cut, under `resp_`. */
  const shownResponseId = (id: string) => idForMessage(requestIdOf(id)).replace(/^req_/, 'resp_');

  it.each(notIds)('answers GET /v1/ai?req_id= %s with the 404 of an unknown request id', async (_name, text) => {
    const unknown = randomIds.requestId();
    const expected = await notFound(await get(`/v1/ai?req_id=${unknown}`), unknown);
    const answer = await notFound(await get(`/v1/ai?req_id=${encodeURIComponent(text)}`), idForMessage(text));
    expect(answer.status).toBe(404);
    expect(answer).toEqual(expected);
  });

  it.each(notIds)('answers GET /v1/responses/{id} of %s with the 404 of an unknown response id', async (_n, text) => {
    const unknown = withResp(randomIds.requestId());
    const expected = await notFound(await get(`/v1/responses/${unknown}`), shownResponseId(unknown));
    const id = withResp(text);
    const answer = await notFound(await get(`/v1/responses/${encodeURIComponent(id)}`), shownResponseId(id));
    expect(answer.status).toBe(404);
    expect(answer).toEqual(expected);
    expect((await get(`/v1/responses/${encodeURIComponent(id)}?stream=true`)).status).toBe(404);
  });

  it.each(notIds)('answers POST /v1/responses/{id}/cancel of %s with the 404 of an unknown id', async (_n, text) => {
    const unknown = withResp(randomIds.requestId());
    const expected = await notFound(await post(`/v1/responses/${unknown}/cancel`), shownResponseId(unknown));
    const id = withResp(text);
    const answer = await notFound(await post(`/v1/responses/${encodeURIComponent(id)}/cancel`), shownResponseId(id));
    expect(answer.status).toBe(404);
    expect(answer).toEqual(expected);
  });

  it('answers an item_reference that cannot name an item of a Response like an unknown one, never 500', async () => {
    const create = (id: string) =>
      post('/v1/responses', { model: 'echo', input: [{ type: 'item_reference', id }], background: true });
    const unknown = await create(`msg_${randomIds.requestId().slice(4)}`);
    for (const id of ["msg_\u0000'", `msg_${'a'.repeat(10_000)}`, 'fc_\u0000_1', 'msg_ü😀']) {
      const answer = await create(id);
      expect(answer.status).toBe(unknown.status);
      expect(answer.status).toBeLessThan(500);
    }
  });

  it('answers fields with control characters in an API call with a 4xx, never 500', async () => {
    const nul = '\u0000';
    const answers = [
      await post('/v1/ai', { model: `echo${nul}`, prompt: 'hi' }),
      await post('/v1/responses', { model: `echo${nul}'`, input: 'hi' }),
      await post('/v1/chat/completions', { model: nul, messages: [{ role: 'user', content: 'hi' }] }),
      await post('/v1/ai', { model: 'echo', prompt: 'hi' }, { 'idempotency-key': 'a\tb' }),
      await get(`/v1/models/${encodeURIComponent(`echo${nul}'`)}`),
    ];
    // The OpenAI faces answer a model that does not exist for the caller as OpenAI does: 404 model_not_found.
    expect(answers.map((answer) => answer.status)).toEqual([400, 404, 404, 400, 404]);
  });

  it('keeps NUL and other control characters in prompts and user as text, answered 2xx, and refuses them in metadata with a 400 naming it', async () => {
    const text = "a\u0000b\u001b[31m'";
    const answers = [
      await post('/v1/ai', { model: 'echo', prompt: text }),
      await post('/v1/responses', { model: 'echo', input: text, user: text, background: true }),
      await post('/v1/chat/completions', { model: 'echo', messages: [{ role: 'user', content: text }], user: text }),
    ];
    expect(answers.map((answer) => answer.status < 300)).toEqual([true, true, true]);
    const metadata = await post('/v1/responses', {
      model: 'echo',
      input: 'hi',
      metadata: { k: text },
      background: true,
    });
    expect(metadata.status).toBe(400);
    expect(((await metadata.json()) as { error: { param?: string } }).error.param).toBe('metadata');
  });

  it('keeps a Response’s metadata with its request, as the create answered it, for a retrieve', async () => {
    const metadata = { team: 'evals', run: 'ünïcode ✓', empty: '' };
    const created = await post('/v1/responses', { model: 'echo', input: 'hi', metadata, background: true });
    expect(created.status).toBe(200);
    const { id } = (await created.json()) as { id: string };
    const retrieved = await get(`/v1/responses/${id}`);
    expect(((await retrieved.json()) as { metadata: unknown }).metadata).toEqual(metadata);
  });

  describe('on the dashboard', () => {
    /** The signup page's CSRF token and its cookie, as a browser would hold them. */
    const anonymousForm = async () => formTokensOf(await app.call('GET', '/dashboard/login'));
    const postForm = async (path: string, fields: Record<string, string>, cookie?: string) => {
      // Failed logins are throttled per address (5 in 15 minutes): each form here comes in a window of its own.
      (app.clock as ManualClock).advance(16 * 60_000);
      const { csrf, cookie: anonymous } = await anonymousForm();
      return app.http.request(`http://airs.test${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookie ?? anonymous },
        body: new URLSearchParams({ ...fields, csrf: fields.csrf ?? csrf }).toString(),
        redirect: 'manual',
      });
    };
    /** What a page says, without its per-visitor parts (CSRF token, the email echoed back). */
    const pageText = async (answer: Response, email: string) =>
      (await answer.text())
        .replace(/name="csrf" value="[^"]+"/g, '')
        .split(email.replace(/&/g, '&amp;').replace(/"/g, '&quot;'))
        .join('<email>');

    let session: string;
    let sessionCsrf: string;
    beforeAll(async () => {
      const signedUp = await postForm('/dashboard/signup', { email: `owner-${Date.now()}@example.com`, password });
      expect(signedUp.status).toBe(303);
      session = (signedUp.headers.getSetCookie().find((c) => c.startsWith('airs_session=')) ?? '').split(';')[0] ?? '';
      const keys = await app.http.request('http://airs.test/dashboard/keys', { headers: { cookie: session } });
      sessionCsrf = /name="csrf" value="([^"]+)"/.exec(await keys.text())?.[1] ?? '';
    });

    it.each([
      ['a NUL', 'a\u0000b@x.com'],
      ['a NUL and a quote', "a\u0000'@x.com"],
      ['an escape sequence', 'a\u001b[31m@x.com'],
      ['a line break', 'a\nb@x.com'],
    ])('answers a login with %s in the email as a wrong login, the same as an unknown email', async (_n, email) => {
      const unknown = 'nobody-at-all@x.com';
      const expected = await postForm('/dashboard/login', { email: unknown, password });
      const answer = await postForm('/dashboard/login', { email, password });
      expect(answer.status).toBe(401);
      expect(expected.status).toBe(401);
      expect(await pageText(answer, email)).toBe(await pageText(expected, unknown));
    });

    it('answers a login with a NUL in the password as a wrong login', async () => {
      const answer = await postForm('/dashboard/login', {
        email: 'nobody-at-all@x.com',
        password: `${password}\u0000`,
      });
      expect(answer.status).toBe(401);
    });

    it.each([
      ['email', { email: 'a\u0000b@x.com', password }, 'an email address must not contain control characters'],
      ['email', { email: "a\u0000'@x.com", password }, 'an email address must not contain control characters'],
      ['password', { email: 'fresh-nul@x.com', password: `${password}\u0000` }, 'a password must not contain'],
    ])('answers a signup with a control character in its %s with a 400 that names it', async (_f, fields, says) => {
      const answer = await postForm('/dashboard/signup', fields);
      expect(answer.status).toBe(400);
      expect(await answer.text()).toContain(says);
    });

    it('answers a key id that cannot be one with the 404 page of an unknown key', async () => {
      const remove = (keyId: string) =>
        app.http.request(`http://airs.test/dashboard/keys/${keyId}/delete`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: session },
          body: new URLSearchParams({ csrf: sessionCsrf }).toString(),
          redirect: 'manual',
        });
      const expected = await remove(randomIds.keyId());
      expect(expected.status).toBe(404);
      const expectedText = await expected.text();
      for (const keyId of ['%00', "key_%00'", `key_${'a'.repeat(10_000)}`, 'key_%C3%BC%F0%9F%98%80']) {
        const answer = await remove(keyId);
        expect(answer.status).toBe(404);
        expect(await answer.text()).toBe(expectedText);
      }
    });

    it('names a key with a control character a 400, and pages with a cursor that is not one a 400', async () => {
      const named = await postForm('/dashboard/keys', { name: 'ci\u0000', csrf: sessionCsrf }, session);
      expect(named.status).toBe(400);
      for (const cursor of ['1.req_%00', '%00', `1.${'a'.repeat(10_000)}`]) {
        const page = await app.http.request(`http://airs.test/dashboard/requests?before=${cursor}`, {
          headers: { cookie: session },
        });
        expect(page.status).toBe(400);
      }
    });

    it('answers a session cookie that cannot be one as no session', async () => {
      for (const cookie of ['airs_session=%00', "airs_session=sess_%00'.x", `airs_session=${'a'.repeat(5_000)}`]) {
        const page = await app.http.request('http://airs.test/dashboard', { headers: { cookie }, redirect: 'manual' });
        expect(page.status).toBe(303);
      }
    });
  });

  it('answers any text with control characters, quotes or unicode in an id or a field below 500 (a quick fuzz)', async () => {
    const unit = fc.oneof(
      fc.constantFrom('\u0000', "'", '"', '\\', '%', '\u001b', '\n', '\u007f', '\u0085', 'ü', '😀', '\ud800'),
      fc.integer({ min: 0, max: 0x1f }).map((code) => String.fromCharCode(code)),
      fc.constantFrom('req_', 'resp_', 'msg_', 'key_', 'a', 'Z', '0', '-', '_'),
    );
    const text = fc.string({ unit, maxLength: 40 });
    // Every byte percent-encoded (a lone surrogate as U+FFFD, as a client's UTF-8 encoder sends it).
    const encoded = (t: string) => [...Buffer.from(t)].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');
    const calls = (t: string) => [
      () => get(`/v1/ai?req_id=${encoded(t)}`),
      () => get(`/v1/responses/${encoded(t)}`),
      () => post(`/v1/responses/${encoded(t)}/cancel`),
      () => get(`/v1/models/${encoded(t)}`),
      () => post('/v1/ai', { model: t, prompt: t }),
      () => post('/v1/responses', { model: 'echo', input: [{ type: 'item_reference', id: t }], user: t }),
      () => post('/v1/responses', { model: 'echo', input: t, metadata: { [t]: t }, background: true }),
      () => post('/v1/chat/completions', { model: 'echo', messages: [{ role: 'user', content: t }], user: t }),
    ];
    await fc.assert(
      fc.asyncProperty(text, async (t) => {
        const from = lines.length;
        for (const call of calls(t)) {
          const answer = await call();
          await answer.arrayBuffer();
          expect(answer.status).toBeLessThan(500);
        }
        expect(lines.slice(from).filter((line) => line.level >= 50)).toEqual([]);
      }),
      { numRuns: 25 },
    );
  });

  it('leaves the account it asked with unharmed', async () => {
    expect(accountId).toMatch(/^acct_/);
    expect((await post('/v1/ai', { model: 'echo', prompt: 'still here' })).status).toBe(202);
  });
});

afterAll(() => stopTestCluster(), 60_000);

describe('Faults under a call', () => {
  /** An app whose store fails one read with a plain error (a fault, not the client's), its log lines kept. */
  const faultyApp = async (read: 'accountIdByEmail' | 'requestWithText') => {
    const store = openMemoryStore();
    const reads = Object.create(store.reads) as typeof store.reads;
    Object.defineProperty(reads, read, {
      value: async () => {
        throw new Error('the disk is on fire');
      },
    });
    const lines: LogLine[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line) as LogLine);
        done();
      },
    });
    const app = await startTestApp({
      storeLayer: MemoryStoreLayer({ ...store, reads }),
      logger: pino({ level: 'info' }, sink),
    });
    return { app, lines };
  };
  const stderrDuring = async (call: () => Promise<unknown>) => {
    const written: string[] = [];
    const spies = [
      vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
        written.push(String(chunk));
        return true;
      }),
      vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
        written.push(String(chunk));
        return true;
      }),
      vi.spyOn(console, 'error').mockImplementation((...args) => void written.push(args.map(String).join(' '))),
    ];
    try {
      await call();
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    return written;
  };

  it('on the dashboard are one JSON error line with the stack, a 500 page, and nothing on stdout or stderr', async () => {
    const { app, lines } = await faultyApp('accountIdByEmail');
    try {
      const page = await app.call('GET', '/dashboard/login');
      const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
      const cookie = (page.headers.getSetCookie()[0] ?? '').split(';')[0] ?? '';
      let answer: Response | undefined;
      const written = await stderrDuring(async () => {
        answer = await app.http.request('http://airs.test/dashboard/login', {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
          body: new URLSearchParams({ email: 'someone@example.com', password, csrf }).toString(),
        });
      });
      expect(written).toEqual([]);
      expect(answer?.status).toBe(500);
      expect(answer?.headers.get('content-type')).toMatch(/^text\/html/);
      const text = (await answer?.text()) ?? '';
      expect(text).toContain('Something went wrong');
      expect(text).not.toContain('the disk is on fire');
      const faults = lines.filter((line) => line.level >= 50);
      expect(faults).toHaveLength(1);
      expect(faults[0]?.msg).toBe('request failed');
      expect(faults[0]?.err?.stack).toContain('the disk is on fire');
    } finally {
      await app.stop();
    }
  });

  it('on the API are one JSON error line with the stack, the contract’s 500, and nothing on stderr', async () => {
    const { app, lines } = await faultyApp('requestWithText');
    try {
      const { key } = await app.account();
      let answer: Response | undefined;
      const written = await stderrDuring(async () => {
        answer = await app.call('GET', `/v1/ai?req_id=${randomIds.requestId()}`, { key });
      });
      expect(written).toEqual([]);
      expect(answer?.status).toBe(500);
      expect(await answer?.json()).toEqual({
        error: { code: 'server_error', message: 'internal error; retry after 30 seconds' },
      });
      const faults = lines.filter((line) => line.level >= 50);
      expect(faults).toHaveLength(1);
      expect(faults[0]?.err?.stack).toContain('the disk is on fire');
    } finally {
      await app.stop();
    }
  });
});
