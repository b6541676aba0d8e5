import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';
import {
  createAccountWithKey,
  fileSandboxes,
  poll,
  runCli,
  type Sandbox,
  type ServerProcess,
  servingPids,
  sleep,
  startServer,
  stderrShowing,
  submit,
} from '../support/processes.js';

/*
 * Contract 19, "Changes without a restart", as an operator does it: `airs serve` children, a config file rewritten,
 * SIGHUP (or `airs models reload`), and calls over real sockets to fake OpenAI-compatible upstreams.
 */

const newBox = fileSandboxes();
const started: ServerProcess[] = [];
const upstreams: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const server of started.splice(0)) await server.stop('SIGKILL');
});
afterAll(async () => {
  for (const upstream of upstreams.splice(0)) await upstream.close();
});

const upstream = async (delayMs: number) => {
  const fake = await startFakeOpenAi({ delayMs });
  upstreams.push(fake);
  return fake;
};

const openAiModel = (id: string, baseUrl: string) => ({
  id,
  provider: 'openai',
  baseUrl,
  upstreamModel: 'served',
  maxRetries: 0,
});

const serve = async (box: Sandbox, options: Parameters<typeof startServer>[1] = {}) => {
  const server = await startServer(box, { timeoutMs: 40_000, ...options });
  started.push(server);
  return server;
};

/** Polls a request until it is final (or 20 s pass): its last answer. `completed` is 200; a failure is 500 with
 * `details.final`; an expired or cancelled one is 404. */
const untilFinal = async (url: string, key: string, reqId: string) => {
  for (let i = 0; i < 200; i++) {
    const answer = await poll(url, key, reqId);
    if (answer.status !== 200 || answer.body.status !== 'queued') return answer;
    await sleep(100);
  }
  return poll(url, key, reqId);
};

const completed = { status: 200, body: expect.objectContaining({ status: 'completed' }) };

/** The JSON log lines with message `msg`. */
const logLines = (server: ServerProcess, msg: string) =>
  server
    .stderr()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => entry.msg === msg);

const reloaded = 'config reloaded: models and plans applied';
const refused = 'config not reloaded: the file does not validate; nothing changed';
const needRestart = 'config reload: these settings need a restart and were not applied';

describe('airs serve applies a changed config without a restart (contract 19)', { timeout: 90_000 }, () => {
  it('SIGHUP adds a model and removes one while requests flow: the added one answers, every accepted request ends, the removed one is unknown', async () => {
    const [slow, fresh] = [await upstream(600), await upstream(20)];
    const box = newBox('airs-reload');
    box.writeConfig({ models: [openAiModel('old', slow.baseUrl)] });
    const server = await serve(box);
    const { key } = await createAccountWithKey(box, 'reload@example.com', 'scale');

    // Requests flow to the old model; the file changes and SIGHUP comes while some are in flight on its upstream.
    const accepted: string[] = [];
    for (let i = 0; i < 6; i++) {
      const answer = await submit(server.url, key, 'old', `before ${i}`);
      expect(answer.status).toBe(202);
      accepted.push(String(answer.body.request_id));
      await sleep(50);
    }
    box.writeConfig({ models: [openAiModel('new', fresh.baseUrl)] });
    server.child.kill('SIGHUP');
    await stderrShowing(server, /config reloaded/);
    expect(logLines(server, reloaded)).toEqual([
      expect.objectContaining({ cause: 'SIGHUP', models: ['new'], added: ['new'], removed: ['old'] }),
    ]);

    // The added model takes calls at once, on its own upstream.
    const added = await submit(server.url, key, 'new', 'after the reload');
    expect(added.status).toBe(202);
    expect(await untilFinal(server.url, key, String(added.body.request_id))).toMatchObject(completed);
    expect(fresh.calls('after the reload')).toBe(1);

    // The removed one is refused as unknown, naming the models there are now.
    const removed = await submit(server.url, key, 'old', 'too late');
    expect(removed.status).toBe(400);
    expect(removed.body).toMatchObject({
      error: { code: 'invalid_request', message: expect.stringContaining('unknown model "old"; known models: new') },
    });

    // No accepted request is lost: those in flight at the reload end on the upstream they started on.
    const ends = await Promise.all(accepted.map((reqId) => untilFinal(server.url, key, reqId)));
    expect(ends.map((end) => end.body.status)).toEqual(accepted.map(() => 'completed'));
    expect(slow.prompts().sort()).toEqual(accepted.map((_, i) => `before ${i}`));
    expect(server.child.exitCode).toBeNull();
  });

  it('refuses a file that is not JSON, then one that breaks the schema: the log says why and the running models keep serving', async () => {
    const fake = await upstream(10);
    const box = newBox('airs-reload-bad');
    box.writeConfig({ models: [openAiModel('kept', fake.baseUrl)] });
    const server = await serve(box);
    const { key } = await createAccountWithKey(box, 'bad@example.com', 'scale');

    box.writeConfig('{ "models": [ ');
    server.child.kill('SIGHUP');
    await stderrShowing(server, /not valid JSON/);
    box.writeConfig({ models: [{ id: 'broken', provider: 'openai', baseUrl: 'not a url', upstreamModel: 'x' }] });
    server.child.kill('SIGHUP');
    await stderrShowing(server, /models\[0\]\.baseUrl|models\.0\.baseUrl/);

    const problems = logLines(server, refused).map((entry) => String(entry.problem));
    expect(problems).toHaveLength(2);
    expect(problems[0]).toContain('not valid JSON');
    expect(problems[1]).toMatch(/baseUrl/);
    expect(logLines(server, reloaded)).toEqual([]);

    const answer = await submit(server.url, key, 'kept', 'still here');
    expect(answer.status).toBe(202);
    expect(await untilFinal(server.url, key, String(answer.body.request_id))).toMatchObject(completed);
    expect((await submit(server.url, key, 'broken', 'never')).status).toBe(400);
  });

  it('names the changed settings that need a restart, applies none of them, and applies the models beside them', async () => {
    const fake = await upstream(10);
    const box = newBox('airs-reload-restart');
    box.writeConfig({ models: [openAiModel('first', fake.baseUrl)] });
    const server = await serve(box);
    const { key } = await createAccountWithKey(box, 'restart@example.com', 'scale');

    box.writeConfig({
      models: [openAiModel('first', fake.baseUrl), openAiModel('second', fake.baseUrl)],
      maxPromptChars: 10,
      processes: 3,
    });
    server.child.kill('SIGHUP');
    await stderrShowing(server, /config reloaded/);
    // The worker count that follows the models by default is named too: it stays as at start.
    expect(logLines(server, needRestart)).toEqual([
      expect.objectContaining({ keys: ['maxPromptChars', 'processing.concurrency', 'processes'] }),
    ]);
    expect(logLines(server, reloaded)).toEqual([expect.objectContaining({ added: ['second'] })]);

    // A prompt longer than the reloaded 10 characters is taken (the start's bound holds); the new model serves it.
    const answer = await submit(server.url, key, 'second', 'a prompt of more than ten characters');
    expect(answer.status).toBe(202);
    expect(await untilFinal(server.url, key, String(answer.body.request_id))).toMatchObject(completed);
  });

  it('applies a plan changed in the file from the next call: a lower submit rate refuses what the old one took', async () => {
    const box = newBox('airs-reload-plans');
    box.writeConfig({});
    const server = await serve(box);
    const { key } = await createAccountWithKey(box, 'plans@example.com', 'free');
    for (let i = 0; i < 3; i++) expect((await submit(server.url, key, 'echo', `before ${i}`)).status).toBe(202);

    box.writeConfig({ plans: { free: { submitsPerMinute: 1 } } });
    server.child.kill('SIGHUP');
    await stderrShowing(server, /config reloaded/);
    expect(logLines(server, reloaded)).toEqual([expect.objectContaining({ plans: ['free'], added: [], removed: [] })]);
    const refusedSubmit = await submit(server.url, key, 'echo', 'after');
    expect(refusedSubmit.status).toBe(429);
  });

  it('under --processes 2, SIGHUP to the primary has every server process apply the file (both answer for the new model)', async () => {
    const fake = await upstream(10);
    const box = newBox('airs-reload-processes');
    box.writeConfig({ models: [openAiModel('one', fake.baseUrl)] });
    const server = await serve(box, { args: ['--processes', '2'], env: { LOG_LEVEL: 'debug' } });
    const { key } = await createAccountWithKey(box, 'processes@example.com', 'scale');

    box.writeConfig({ models: [openAiModel('one', fake.baseUrl), openAiModel('two', fake.baseUrl)] });
    server.child.kill('SIGHUP');
    for (let i = 0; i < 100 && logLines(server, reloaded).length < 2; i++) await sleep(100);
    const applied = logLines(server, reloaded);
    expect(new Set(applied.map((entry) => entry.pid)).size).toBe(2);
    expect(applied.every((entry) => JSON.stringify(entry.added) === '["two"]')).toBe(true);

    // Each call on a connection of its own: the primary hands connections to the processes in turn.
    const statuses = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        await sleep(i * 20);
        const response = await fetch(`${server.url}/v1/ai`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', connection: 'close' },
          body: JSON.stringify({ model: 'two', prompt: `two ${i}` }),
        });
        return response.status;
      }),
    );
    expect(statuses).toEqual(statuses.map(() => 202));
    for (let i = 0; i < 50 && servingPids(server, '/v1/ai').size < 2; i++) await sleep(100);
    expect(servingPids(server, '/v1/ai').size).toBe(2);
  });

  it('airs models reload has every server of the data directory apply the file, and refuses a file that does not load', async () => {
    const fake = await upstream(10);
    const box = newBox('airs-models-reload');
    box.writeConfig({ models: [openAiModel('one', fake.baseUrl)] });
    const servers = [await serve(box), await serve(box)];
    const { key } = await createAccountWithKey(box, 'lmdb@example.com', 'scale');

    box.writeConfig({ models: [openAiModel('one', fake.baseUrl), openAiModel('two', fake.baseUrl)] });
    const asked = await runCli(box, ['models', 'reload']);
    expect(asked.code, asked.stderr).toBe(0);
    expect(asked.stdout).toContain('asked every server of the data directory');
    for (const server of servers) {
      await stderrShowing(server, /config reloaded/);
      expect(logLines(server, reloaded)).toEqual([
        expect.objectContaining({ cause: 'airs models reload', added: ['two'] }),
      ]);
      const answer = await submit(server.url, key, 'two', `on ${server.url}`);
      expect(answer.status).toBe(202);
      expect(await untilFinal(server.url, key, String(answer.body.request_id))).toMatchObject(completed);
    }

    // A file that does not load is refused by the command itself: nothing is asked.
    box.writeConfig('{');
    const refusedAsk = await runCli(box, ['models', 'reload']);
    expect(refusedAsk.code).toBe(2);
    expect(refusedAsk.stderr).toContain('not valid JSON');
    await sleep(1_000);
    for (const server of servers) expect(logLines(server, reloaded)).toHaveLength(1);
  });
});
