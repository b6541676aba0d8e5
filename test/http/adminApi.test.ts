import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { createAdminAccounts } from '../../src/app/adminAccounts.js';
import { createAdminKeys } from '../../src/app/adminKeys.js';
import { systemClock } from '../../src/ports/Clock.js';
import { randomIds } from '../../src/ports/Ids.js';
import { loggedEvents, requestInit, servedTestApps, type TestApp } from '../support/testApp.js';
import { assertMatchesOpenApi } from './support/openapi.js';

/**
 * The admin API (product contract 21) over a real socket: an operator's backend provisions a team (an account and its
 * key) with an admin key, and the team then works with the official `openai` SDK and `/v1/ai`. Admin keys are made as
 * `airs admin-keys create` makes them (app/adminKeys.ts; the CLI itself is tested in test/integration).
 */

const serve = servedTestApps();

/** The document's path template of an admin call (the checker looks paths up as written there). */
const templateOf = (path: string) => path.replace(/\/(acct|key)_[^/?]+/, '/{id}');

const start = async () => {
  const { app, served } = await serve({
    clock: systemClock,
    config: {
      models: [
        { id: 'echo', provider: 'echo', delayMs: 0, timeoutMs: 60_000 },
        { id: 'echo-large', provider: 'echo', delayMs: 0, timeoutMs: 60_000 },
      ],
    },
  });
  const adminKeys = createAdminKeys({ reads: app.store.reads, committer: app.committer, clock: app.clock });
  const made = await adminKeys.create('backend');
  if (made instanceof Error) throw made;
  const call = async (
    method: string,
    path: string,
    init: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
  ) => {
    const response = await fetch(`${served.url}${path}`, requestInit(method, init));
    const text = await response.text();
    const body = text === '' ? undefined : JSON.parse(text);
    // Every answer of the admin API is as the OpenAPI document says (status, headers, body).
    if (path.startsWith('/v1/admin'))
      assertMatchesOpenApi({
        method,
        path: templateOf(path),
        status: response.status,
        headers: response.headers,
        body,
      });
    return { status: response.status, headers: response.headers, body };
  };
  return { app, url: served.url, adminKeys, admin: made.key, adminKeyId: made.id, call };
};

type Started = Awaited<ReturnType<typeof start>>;

/** Provisions an account and a key of it through the admin API. */
const provision = async ({ call, admin }: Started, email: string) => {
  const account = await call('POST', '/v1/admin/accounts', { key: admin, body: { email, plan: 'starter' } });
  expect(account.status).toBe(201);
  const key = await call('POST', `/v1/admin/accounts/${account.body.id}/keys`, { key: admin, body: { name: 'ci' } });
  expect(key.status).toBe(201);
  return { accountId: account.body.id as string, keyId: key.body.id as string, key: key.body.key as string };
};

const accountCount = async (app: TestApp) => (await app.store.reads.accounts()).length;

describe('the admin API', () => {
  it('provisions a team whose key then submits and polls on /v1/ai and lists models and chats with the openai SDK', async () => {
    const started = await start();
    const { call, admin, url } = started;
    const team = await provision(started, 'Team-A@Example.com');
    const account = await call('GET', `/v1/admin/accounts/${team.accountId}`, { key: admin });
    expect(account).toMatchObject({
      status: 200,
      body: {
        object: 'account',
        id: team.accountId,
        email: 'team-a@example.com',
        plan: 'starter',
        suspended: false,
        active_keys: 1,
      },
    });
    expect(team.key).toMatch(/^sk_[A-Za-z0-9_-]{43}$/);

    const client = new OpenAI({ apiKey: team.key, baseURL: `${url}/v1`, maxRetries: 0 });
    const models = await client.models.list();
    expect(models.data.map((model) => model.id)).toContain('echo');
    const chat = await client.chat.completions.create({
      model: 'echo',
      messages: [{ role: 'user', content: 'hello team' }],
    });
    expect(chat.choices[0]?.message.content).toContain('hello team');

    const submitted = await call('POST', '/v1/ai', {
      key: team.key,
      body: { model: 'echo', prompt: 'from the backend' },
    });
    expect(submitted.status).toBe(202);
    const location = submitted.headers.get('location') as string;
    expect(location).toContain(submitted.body.request_id);
    let polled = await call('GET', location, { key: team.key });
    for (let tries = 0; polled.body.status === 'queued' && tries < 200; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      polled = await call('GET', location, { key: team.key });
    }
    expect(polled.body).toMatchObject({ status: 'completed', response: expect.stringContaining('from the backend') });

    const keys = await call('GET', `/v1/admin/accounts/${team.accountId}/keys`, { key: admin });
    expect(keys.body).toMatchObject({
      object: 'list',
      data: [{ object: 'api_key', id: team.keyId, name: 'ci', revoked_at: null }],
    });
    expect(JSON.stringify(keys.body)).not.toContain(team.key);
  });

  it('lists accounts by id a page at a time, with has_more and last_id for the next page', async () => {
    const started = await start();
    for (const n of [1, 2, 3]) await provision(started, `page${n}@example.com`);
    const first = await started.call('GET', '/v1/admin/accounts?limit=2', { key: started.admin });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ object: 'list', has_more: true });
    expect(first.body.data).toHaveLength(2);
    expect(first.body.last_id).toBe(first.body.data[1].id);
    const rest = await started.call('GET', `/v1/admin/accounts?limit=2&after=${first.body.last_id}`, {
      key: started.admin,
    });
    expect(rest.body).toMatchObject({ object: 'list', has_more: false });
    const ids = [...first.body.data, ...rest.body.data].map((a: { id: string }) => a.id);
    expect(ids).toEqual([...ids].sort());
    expect(new Set(ids).size).toBe(3);
    expect((await started.call('GET', '/v1/admin/accounts?limit=0', { key: started.admin })).status).toBe(400);
  });

  it('answers a create repeated with the same Idempotency-Key with what it made the first time, and the store holds one', async () => {
    const { app, call, admin } = await start();
    const init = { key: admin, body: { email: 'once@example.com' }, headers: { 'Idempotency-Key': 'team-once' } };
    const first = await call('POST', '/v1/admin/accounts', init);
    const again = await call('POST', '/v1/admin/accounts', init);
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(await accountCount(app)).toBe(1);
    const other = await call('POST', '/v1/admin/accounts', { ...init, body: { email: 'other@example.com' } });
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('idempotency_key_reused');
    expect(await accountCount(app)).toBe(1);

    const keyInit = { key: admin, body: { name: 'deploy' }, headers: { 'Idempotency-Key': 'key-once' } };
    const path = `/v1/admin/accounts/${first.body.id}/keys`;
    const key = await call('POST', path, keyInit);
    const keyAgain = await call('POST', path, keyInit);
    expect(key.status).toBe(201);
    expect(keyAgain.status).toBe(201);
    expect(keyAgain.body).toEqual(key.body);
    expect(keyAgain.headers.get('idempotent-replayed')).toBe('true');
    expect(await app.store.reads.keysOf(first.body.id)).toHaveLength(1);
    // The key given back the second time is the working key.
    expect((await call('GET', '/v1/models', { key: keyAgain.body.key })).status).toBe(200);
  });

  it('makes one account of several creates sent at once with the same Idempotency-Key, and answers each with it', async () => {
    const { app, call, admin } = await start();
    const init = { key: admin, body: { email: 'race@example.com' }, headers: { 'Idempotency-Key': 'team-race' } };
    const answers = await Promise.all([1, 2, 3].map(() => call('POST', '/v1/admin/accounts', init)));
    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 201]);
    expect(new Set(answers.map((answer) => answer.body.id)).size).toBe(1);
    expect(await accountCount(app)).toBe(1);
    // Through the service, so that all of them read before any is written: one write makes it, the others find it.
    const accounts = createAdminAccounts({
      reads: app.store.reads,
      committer: app.committer,
      clock: app.clock,
      ids: randomIds,
      plans: () => app.config.plans,
    });
    const by = { adminKeyId: 'adminkey_AAAAAAAAAAAAAAAA', secret: admin };
    const made = await Promise.all(
      [1, 2, 3].map(() => accounts.createAccount(by, { email: 'race2@example.com', plan: 'free' }, 'team-race-2')),
    );
    const ids = made.map((one) => ('made' in one ? one.made.accountId : one.message));
    expect(new Set(ids).size, ids.join(', ')).toBe(1);
    expect(made.filter((one) => 'made' in one && !one.replayed)).toHaveLength(1);
    expect(await accountCount(app)).toBe(2);
  });

  it('revokes an account key at once: its very next call is refused', async () => {
    const started = await start();
    const team = await provision(started, 'revoke@example.com');
    expect((await started.call('GET', '/v1/models', { key: team.key })).status).toBe(200);
    const revoked = await started.call('DELETE', `/v1/admin/keys/${team.keyId}`, { key: started.admin });
    expect(revoked.status).toBe(200);
    expect(revoked.body.revoked_at).toEqual(expect.any(Number));
    expect((await started.call('GET', '/v1/models', { key: team.key })).status).toBe(401);
    expect((await started.call('POST', '/v1/ai', { key: team.key, body: { model: 'echo', prompt: 'x' } })).status).toBe(
      401,
    );
    expect((await started.call('DELETE', '/v1/admin/keys/key_AAAAAAAAAAAAAAAA', { key: started.admin })).status).toBe(
      404,
    );
  });

  it('refuses an account key with 403, no key or an unknown or revoked admin key with 401, and an admin key on /v1/ai with 401', async () => {
    const started = await start();
    const { call, admin, app } = started;
    const team = await provision(started, 'refusals@example.com');
    const accountKey = await call('GET', '/v1/admin/accounts', { key: team.key });
    expect(accountKey.status).toBe(403);
    expect(accountKey.body.error.code).toBe('forbidden');
    const none = await call('GET', '/v1/admin/accounts');
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('unauthorized');
    expect((await call('GET', '/v1/admin/accounts', { key: `sk_admin_${'x'.repeat(43)}` })).status).toBe(401);

    const onAi = await call('POST', '/v1/ai', { key: admin, body: { model: 'echo', prompt: 'x' } });
    expect(onAi.status).toBe(401);
    expect(onAi.body.error.message).toBe('invalid API key');
    expect((await call('GET', '/v1/models', { key: admin })).status).toBe(401);

    const second = await started.adminKeys.create();
    if (second instanceof Error) throw second;
    expect((await call('GET', '/v1/admin/accounts', { key: second.key })).status).toBe(200);
    const revoked = await started.adminKeys.revoke(second.id);
    expect(revoked).toMatchObject({ keyId: second.id, revokedAt: expect.any(Number) });
    const afterRevoke = await call('GET', '/v1/admin/accounts', { key: second.key });
    expect(afterRevoke.status).toBe(401);
    expect(afterRevoke.body.error.message).toContain('revoked');
    // The first admin key still works; the account keys are untouched.
    expect((await call('GET', '/v1/admin/accounts', { key: admin })).status).toBe(200);
    expect((await call('GET', '/v1/models', { key: team.key })).status).toBe(200);
    expect(await app.store.reads.account('admin')).toBeUndefined();
  });

  it('throttles failed admin authentications per client address with 429 and Retry-After, even for a good key then', async () => {
    const { call, admin } = await start();
    for (let n = 0; n < 10; n++)
      expect((await call('GET', '/v1/admin/accounts', { key: `sk_admin_${String(n).repeat(43)}` })).status).toBe(401);
    const throttled = await call('GET', '/v1/admin/accounts', { key: `sk_admin_${'z'.repeat(43)}` });
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(throttled.body.error.code).toBe('rate_limited');
    expect((await call('GET', '/v1/admin/accounts', { key: admin })).status).toBe(429);
  });

  it('counts no try of a good admin key against its address', async () => {
    const { call, admin } = await start();
    for (let n = 0; n < 12; n++) expect((await call('GET', '/v1/admin/accounts', { key: admin })).status).toBe(200);
  });

  it('changes plan and suspension by PATCH, and every admin action is in the log naming the admin key', async () => {
    const started = await start();
    const { app, call, admin, adminKeyId } = started;
    const team = await provision(started, 'patch@example.com');
    const patched = await call('PATCH', `/v1/admin/accounts/${team.accountId}`, {
      key: admin,
      body: { plan: 'scale', suspended: true },
    });
    expect(patched.body).toMatchObject({ plan: 'scale', suspended: true });
    expect((await call('GET', '/v1/models', { key: team.key })).status).toBe(403);
    const resumed = await call('PATCH', `/v1/admin/accounts/${team.accountId}`, {
      key: admin,
      body: { suspended: false },
    });
    expect(resumed.body).toMatchObject({ plan: 'scale', suspended: false });
    expect((await call('GET', '/v1/models', { key: team.key })).status).toBe(200);
    expect((await call('DELETE', `/v1/admin/keys/${team.keyId}`, { key: admin })).status).toBe(200);

    const acted = (await loggedEvents(app)).filter((event) => event.type === 'AdminActed');
    expect(acted.map((event) => ('action' in event ? event.action : undefined))).toEqual([
      'CreateAccount',
      'CreateKey',
      'ChangePlan',
      'Suspend',
      'Resume',
      'RevokeKey',
    ]);
    for (const event of acted) expect(event).toMatchObject({ accountId: team.accountId, adminKeyId });

    expect(
      (await call('PATCH', `/v1/admin/accounts/${team.accountId}`, { key: admin, body: { plan: 'gold' } })).status,
    ).toBe(400);
    expect(
      (await call('PATCH', `/v1/admin/accounts/${team.accountId}`, { key: admin, body: { owner: 'x' } })).status,
    ).toBe(400);
    expect((await call('GET', '/v1/admin/accounts/acct_AAAAAAAAAAAAAAAA', { key: admin })).status).toBe(404);
  });

  it('refuses a body over 16 KiB, and one that is not the schema, without creating anything', async () => {
    const { app, call, admin } = await start();
    const big = await call('POST', '/v1/admin/accounts', {
      key: admin,
      body: { email: `${'a'.repeat(20_000)}@example.com` },
    });
    expect(big.status).toBe(413);
    const noEmail = await call('POST', '/v1/admin/accounts', { key: admin, body: { plan: 'free' } });
    expect(noEmail.status).toBe(400);
    expect(noEmail.body.error.details).toEqual({ param: 'email' });
    expect((await call('PUT', '/v1/admin/accounts', { key: admin })).status).toBe(405);
    expect(await accountCount(app)).toBe(0);
  });

  it('creates an account with its own limits and changes them by PATCH: a model not allowed does not exist for its SDK', async () => {
    const { app, call, admin, url, adminKeyId } = await start();
    const account = await call('POST', '/v1/admin/accounts', {
      key: admin,
      body: { email: 'limited@example.com', plan: 'starter', limits: { allowedModels: ['echo'], maxQueued: 7 } },
    });
    expect(account).toMatchObject({ status: 201, body: { limits: { allowedModels: ['echo'], maxQueued: 7 } } });
    const key = await call('POST', `/v1/admin/accounts/${account.body.id}/keys`, { key: admin, body: {} });
    const client = new OpenAI({ apiKey: key.body.key, baseURL: `${url}/v1`, maxRetries: 0 });
    expect((await client.models.list()).data.map((model) => model.id)).toEqual(['echo']);
    const refused = await client.chat.completions
      .create({ model: 'echo-large', messages: [{ role: 'user', content: 'hi' }] })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.NotFoundError);
    expect((refused as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');

    const patched = await call('PATCH', `/v1/admin/accounts/${account.body.id}`, {
      key: admin,
      body: { limits: { allowedModels: null } },
    });
    expect(patched.body.limits).toEqual({ maxQueued: 7 });
    expect((await client.models.list()).data.map((model) => model.id).sort()).toEqual(['echo', 'echo-large']);
    const limitsActions = (await loggedEvents(app)).filter(
      (event) => event.type === 'AdminActed' && 'action' in event && event.action === 'SetLimits',
    );
    expect(limitsActions).toHaveLength(2);
    for (const event of limitsActions) expect(event).toMatchObject({ accountId: account.body.id, adminKeyId });
    const bad = await call('PATCH', `/v1/admin/accounts/${account.body.id}`, {
      key: admin,
      body: { limits: { maxQueued: -1 } },
    });
    expect(bad.status).toBe(400);
  });

  it('makes a key with expires_at that works until then and answers 401 from then on', async () => {
    const started = await start();
    const { call, admin } = started;
    const team = await provision(started, 'expiring@example.com');
    const expiresAt = Math.floor(Date.now() / 1000) + 2;
    const key = await call('POST', `/v1/admin/accounts/${team.accountId}/keys`, {
      key: admin,
      body: { expires_at: expiresAt },
    });
    expect(key).toMatchObject({ status: 201, body: { expires_at: expiresAt } });
    expect((await call('GET', '/v1/models', { key: key.body.key })).status).toBe(200);
    const past = await call('POST', `/v1/admin/accounts/${team.accountId}/keys`, {
      key: admin,
      body: { expires_at: expiresAt - 3_600 },
    });
    expect(past.status).toBe(400);
    await new Promise((resolve) => setTimeout(resolve, expiresAt * 1000 - Date.now() + 100));
    expect((await call('GET', '/v1/models', { key: key.body.key })).status).toBe(401);
    expect((await call('GET', '/v1/models', { key: team.key })).status).toBe(200);
  });

  it('answers usage in the shape of OpenAI’s usage API, equal to the log’s completions, to admin keys only', async () => {
    const started = await start();
    const { app, call, admin } = started;
    const team = await provision(started, 'usage@example.com');
    const startTime = Math.floor(Date.now() / 1000);
    for (const [model, prompt] of [
      ['echo', 'one two three'],
      ['echo', 'four five'],
      ['echo-large', 'six'],
    ] as const) {
      const submitted = await call('POST', '/v1/ai', { key: team.key, body: { model, prompt } });
      let polled = await call('GET', submitted.headers.get('location') as string, { key: team.key });
      for (let tries = 0; polled.body.status !== 'completed' && tries < 200; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        polled = await call('GET', submitted.headers.get('location') as string, { key: team.key });
      }
      expect(polled.body.status).toBe('completed');
    }
    const usage = await call('GET', `/v1/admin/usage?start_time=${startTime}&group_by=account_id,model`, {
      key: admin,
    });
    expect(usage.status).toBe(200);
    expect(usage.body).toMatchObject({ object: 'page', has_more: false });
    const results = usage.body.data.flatMap((bucket: { results: unknown[] }) => bucket.results);
    const completed = (await loggedEvents(app)).filter((event) => event.type === 'RequestCompleted');
    const sum = (field: 'inputTokens' | 'outputTokens') =>
      completed.reduce((total, event) => total + (('inputTokens' in event && event[field]) || 0), 0);
    expect(results.map((result: { model: string }) => result.model).sort()).toEqual(['echo', 'echo-large']);
    for (const result of results) expect(result).toMatchObject({ account_id: team.accountId });
    const total = (field: string) =>
      results.reduce((t: number, result: Record<string, number>) => t + (result[field] as number), 0);
    expect(total('num_model_requests')).toBe(3);
    expect(total('input_tokens')).toBe(sum('inputTokens'));
    expect(total('output_tokens')).toBe(sum('outputTokens'));
    expect(total('input_tokens')).toBeGreaterThan(0);
    expect((await call('GET', `/v1/admin/usage?start_time=${startTime}`, { key: team.key })).status).toBe(403);
    expect((await call('GET', '/v1/admin/usage?bucket_width=1w&start_time=0', { key: admin })).status).toBe(400);
  });
});
