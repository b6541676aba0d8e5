import OpenAI from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type CreatedKey,
  call,
  cliJson,
  fileSandboxes,
  runCli,
  type ServerProcess,
  sleep,
  startServer,
  submit,
} from '../support/processes.js';

/**
 * Contract 21 through the real `airs` binary and a real server on LMDB: plans of any name from the config file, an
 * account's own limits set by `airs accounts set-limits` (applied from the very next call of a running server),
 * `allowedModels` on every face with the official `openai` SDK, and keys that end (`airs keys create --expires-at`).
 */

const newBox = fileSandboxes();
const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const server of servers) await server.stop();
});

type AccountJson = { id: string; plan: string; limits: Record<string, unknown> };
type LimitsJson = AccountJson & { effective_limits: Record<string, unknown>; own_limits: string[] };

const setLimits = (box: Parameters<typeof runCli>[0], id: string, limits: unknown) =>
  runCli(box, ['accounts', 'set-limits', id, '--json', JSON.stringify(limits), '--print-json']);

describe("plans by name, an account's own limits, allowedModels and keys that end", { timeout: 120_000 }, () => {
  it('creates an account on a plan the config file defines and holds it to its own submitsPerMinute, set while the server runs', async () => {
    const box = newBox('airs-own-limits');
    box.writeConfig({ plans: { gold: { submitsPerMinute: 500, maxKeys: 7 } } });
    const account = await cliJson<AccountJson>(box, [
      'accounts',
      'create',
      '--email',
      'gold@example.com',
      '--plan',
      'gold',
    ]);
    expect(account.plan).toBe('gold');
    const unknown = await runCli(box, ['accounts', 'create', '--email', 'p@example.com', '--plan', 'platinum']);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/unknown plan "platinum"; plans are free, starter, scale, enterprise, gold/);
    const { key } = await cliJson<CreatedKey>(box, ['keys', 'create', '--account', account.id]);
    const server = await startServer(box);
    servers.push(server);
    expect((await submit(server.url, key, 'echo', 'before')).status).toBe(202);

    const set = await setLimits(box, account.id, { submitsPerMinute: 2, maxQueued: 50 });
    expect(set.code).toBe(0);
    const limits = JSON.parse(set.stdout) as LimitsJson;
    expect(limits.limits).toEqual({ submitsPerMinute: 2, maxQueued: 50 });
    // The gold plan's own limits, the free plan's for those it leaves out, the account's overrides over both.
    expect(limits.effective_limits).toMatchObject({
      submitsPerMinute: 2,
      maxQueued: 50,
      maxKeys: 7,
      pollsPerMinute: 600,
    });
    expect(limits.own_limits.sort()).toEqual(['maxQueued', 'submitsPerMinute']);

    // From the very next call: the account's own budget of 2 a minute (GCRA: its state from the first submit stays).
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await submit(server.url, key, 'echo', `after ${i}`)).status);
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThanOrEqual(2);
    const refused = await submit(server.url, key, 'echo', 'once more');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('ratelimit-policy')).toBe('"submits";q=2;w=60');

    // null removes the override: the plan's 500 holds again, at once.
    expect((await setLimits(box, account.id, { submitsPerMinute: null })).code).toBe(0);
    expect((await submit(server.url, key, 'echo', 'plan again')).status).toBe(202);

    const bad = await setLimits(box, account.id, { submitsPerMinute: -1, color: 'red' });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/invalid limits/);
    const long = await setLimits(box, account.id, { allowedModels: Array.from({ length: 1_001 }, (_, i) => `m${i}`) });
    expect(long.code).toBe(2);
  });

  it('makes a model the account may not use a model that does not exist on every face, for the official SDK too', async () => {
    const box = newBox('airs-allowed-models');
    const account = await cliJson<AccountJson>(box, [
      'accounts',
      'create',
      '--email',
      'cheap@example.com',
      '--plan',
      'scale',
    ]);
    const { key } = await cliJson<CreatedKey>(box, ['keys', 'create', '--account', account.id]);
    expect((await setLimits(box, account.id, { allowedModels: ['echo'] })).code).toBe(0);
    const server = await startServer(box);
    servers.push(server);
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: key, maxRetries: 0 });

    expect((await client.models.list()).data.map((model) => model.id)).toEqual(['echo']);
    await expect(client.models.retrieve('echo-slow')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    const responses = await client.responses.create({ model: 'echo-slow', input: 'hi' }).catch((error) => error);
    expect(responses).toBeInstanceOf(OpenAI.NotFoundError);
    expect(responses).toMatchObject({ status: 404, code: 'model_not_found', param: 'model' });
    expect(responses.message).not.toMatch(/echo-slow[,"]?.*known models: .*echo-slow/);
    const chat = await client.chat.completions
      .create({ model: 'echo-slow', messages: [{ role: 'user', content: 'hi' }] })
      .catch((error) => error);
    expect(chat).toMatchObject({ status: 404, code: 'model_not_found' });
    // An allowed model works as ever.
    expect((await client.responses.create({ model: 'echo', input: 'allowed' })).output_text).toBe('allowed');

    const ai = await submit(server.url, key, 'echo-slow', 'hi');
    expect(ai.status).toBe(400);
    expect(ai.body).toMatchObject({ error: { code: 'invalid_request', details: { known_models: ['echo'] } } });

    const lines = ['echo', 'echo-slow'].map((model, i) =>
      JSON.stringify({
        custom_id: `line-${i}`,
        method: 'POST',
        url: '/v1/chat/completions',
        body: { model, messages: [{ role: 'user', content: `line ${i}` }] },
      }),
    );
    const file = await client.files.create({
      file: await OpenAI.toFile(Buffer.from(`${lines.join('\n')}\n`), 'lines.jsonl'),
      purpose: 'batch',
    });
    const created = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    let batch = created;
    for (let i = 0; i < 300 && !['failed', 'completed'].includes(batch.status); i++) {
      await sleep(100);
      batch = await client.batches.retrieve(created.id);
    }
    expect(batch.status).toBe('failed');
    expect(batch.errors?.data).toEqual([
      expect.objectContaining({ line: 2, code: 'invalid_request', param: 'body.model' }),
    ]);
    expect(batch.errors?.data?.[0]?.message).toMatch(/unknown model "echo-slow"; known models: echo$/);
  });

  it('answers a key 401 from its expiry on, shows the expiry in keys list, and refuses an expiry already past', async () => {
    const box = newBox('airs-key-expiry');
    const account = await cliJson<AccountJson>(box, [
      'accounts',
      'create',
      '--email',
      'ends@example.com',
      '--plan',
      'scale',
    ]);
    const past = await runCli(box, ['keys', 'create', '--account', account.id, '--expires-at', '2020-01-01T00:00:00Z']);
    expect(past.code).not.toBe(0);
    expect(past.stderr).toMatch(/expiry is already past/);
    const notTime = await runCli(box, ['keys', 'create', '--account', account.id, '--expires-at', 'tomorrow']);
    expect(notTime.code).toBe(2);

    const server = await startServer(box);
    servers.push(server);
    // A few seconds ahead: starting the CLI takes a second or two on a busy machine.
    const endsAt = new Date(Date.now() + 8_000).toISOString();
    const key = await cliJson<CreatedKey & { expires_at: string }>(box, [
      'keys',
      'create',
      '--account',
      account.id,
      '--expires-at',
      endsAt,
    ]);
    expect(key.expires_at).toBe(endsAt);
    const listed = await cliJson<{ id: string; expires_at: string | null }[]>(box, [
      'keys',
      'list',
      '--account',
      account.id,
    ]);
    expect(listed).toEqual([expect.objectContaining({ id: key.id, expires_at: endsAt })]);

    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: key.key, maxRetries: 0 });
    expect((await client.models.list()).data.length).toBeGreaterThan(0);
    expect((await call(server.url, 'GET', '/v1/models', key.key)).status).toBe(200);
    await sleep(Math.max(0, Date.parse(endsAt) - Date.now()) + 100);
    // The answer authentication cached a moment ago is checked against the clock: 401 at once, as a revoked key.
    const after = await call(server.url, 'GET', '/v1/models', key.key);
    expect(after.status).toBe(401);
    expect(after.body).toMatchObject({ error: { code: 'unauthorized', message: 'this API key has expired' } });
    await expect(client.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    expect((await runCli(box, ['keys', 'list', '--account', account.id])).stdout).toMatch(/expired 20/);
  });
});
