import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';
import { unusedPort } from '../support/ports.js';
import {
  createAccountWithKey,
  fileSandboxes,
  runCli,
  type ServerProcess,
  startServer,
  stderrShowing,
} from '../support/processes.js';

const newBox = fileSandboxes();
const upstreamKey = 'sk-upstream-check-0123456789';

/** The server's JSON log lines (stderr is no terminal: one JSON document a line). */
const logLines = (server: ServerProcess) =>
  server
    .stderr()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string; model?: string; cause?: string });

describe("Each openai model's upstream checked and named", { timeout: 60_000 }, () => {
  let upstream: Awaited<ReturnType<typeof startFakeOpenAi>>;
  let downUrl: string;
  const models = () => [
    { id: 'echo', provider: 'echo' },
    {
      id: 'good',
      provider: 'openai',
      baseUrl: upstream.baseUrl,
      apiKeyEnv: 'UPSTREAM_KEY',
      upstreamModel: 'llama-3-8b',
    },
    { id: 'no-v1', provider: 'openai', baseUrl: upstream.rootUrl, upstreamModel: 'llama-3-8b', maxRetries: 2 },
    { id: 'down', provider: 'openai', baseUrl: downUrl, upstreamModel: 'llama-3-8b', maxRetries: 0 },
    { id: 'bad-key', provider: 'openai', baseUrl: upstream.baseUrl, upstreamModel: 'llama-3-8b' },
  ];
  beforeAll(async () => {
    upstream = await startFakeOpenAi({ modelsKey: upstreamKey });
    downUrl = `http://127.0.0.1:${await unusedPort()}/v1`;
  });
  afterAll(() => upstream.close());

  it('airs models check prints each model’s state, names the URL and cause of each problem, and exits 1 on a problem, 0 without', async () => {
    const box = newBox('airs-models-check');
    box.writeConfig({ models: models() });
    const result = await runCli(box, ['models', 'check'], { env: { UPSTREAM_KEY: upstreamKey } });
    expect(result.code, result.stderr).toBe(1);
    expect(result.stdout.trimEnd().split('\n')).toEqual([
      'echo: ok (echo, built in: no upstream to check)',
      `good: ok (its upstream ${upstream.baseUrl} answers and serves it)`,
      `no-v1: problem: its upstream ${upstream.rootUrl} answered 404: is \`/v1\` missing from its baseUrl?`,
      expect.stringMatching(
        new RegExp(
          `^down: problem: its upstream ${downUrl.replaceAll('.', '\\.')} refused the connection \\(connect ECONNREFUSED 127\\.0\\.0\\.1:\\d+\\)$`,
        ),
      ),
      `bad-key: problem: its upstream ${upstream.baseUrl} answered 401: the key was refused (is the variable apiKeyEnv names set, and right?)`,
    ]);
    expect(result.stderr).toBe('airs: 3 of 4 upstreams have a problem\n');

    box.writeConfig({ models: models().filter((model) => model.id === 'good' || model.id === 'echo') });
    const fine = await runCli(box, ['models', 'check', '--json'], { env: { UPSTREAM_KEY: upstreamKey } });
    expect(fine.code, fine.stderr).toBe(0);
    expect(JSON.parse(fine.stdout)).toEqual({
      models: [
        { model: 'echo', provider: 'echo', state: 'built in' },
        { model: 'good', provider: 'openai', upstream: upstream.baseUrl, state: 'ok' },
      ],
    });
  });

  it('airs models check says an upstream serving other models than the upstreamModel does not serve it, names what it serves, and exits 1', async () => {
    const vllm = await startFakeOpenAi({ models: ['meta-llama/Llama-3.1-8B-Instruct'] });
    try {
      const box = newBox('airs-models-check-name');
      box.writeConfig({
        models: [
          { id: 'wrong', provider: 'openai', baseUrl: vllm.baseUrl, upstreamModel: 'llama-wrongname' },
          { id: 'right', provider: 'openai', baseUrl: vllm.baseUrl, upstreamModel: 'meta-llama/Llama-3.1-8B-Instruct' },
        ],
      });
      const result = await runCli(box, ['models', 'check']);
      expect(result.code, result.stderr).toBe(1);
      expect(result.stdout.trimEnd().split('\n')).toEqual([
        `wrong: problem: its upstream ${vllm.baseUrl} does not serve "llama-wrongname" (the model's upstreamModel): it serves "meta-llama/Llama-3.1-8B-Instruct"`,
        `right: ok (its upstream ${vllm.baseUrl} answers and serves it)`,
      ]);
      expect(result.stderr).toBe('airs: 1 of 2 upstreams has a problem\n');

      // The same at the start of `airs serve`: one warn line, and the server serves anyway.
      const server = await startServer(box);
      await stderrShowing(server, /model wrong: its upstream/);
      const lines = logLines(server).filter((line) => line.level === 40 && line.msg.startsWith('model '));
      expect(lines.map((line) => line.msg)).toEqual([
        `model wrong: its upstream ${vllm.baseUrl} does not serve "llama-wrongname" (the model's upstreamModel): it serves "meta-llama/Llama-3.1-8B-Instruct"`,
      ]);
      const ready = (await (await fetch(`${server.url}/readyz`)).json()) as {
        upstreams: Record<string, { state: string; cause?: string }>;
      };
      expect(ready.upstreams.wrong).toMatchObject({
        state: 'problem',
        cause: "does not serve the model's upstreamModel",
      });
      expect(ready.upstreams.right).toMatchObject({ state: 'ok' });
      await server.stop();
    } finally {
      await vllm.close();
    }
  });

  it('airs models check says it could not confirm the model of an upstream whose /models is no list, and exits 0', async () => {
    const server = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>a proxy</h1>');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    try {
      const box = newBox('airs-models-check-unconfirmed');
      box.writeConfig({ models: [{ id: 'proxied', provider: 'openai', baseUrl, upstreamModel: 'llama-3-8b' }] });
      const result = await runCli(box, ['models', 'check']);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toBe(
        `proxied: unconfirmed: its upstream ${baseUrl} answers, but the check could not confirm that it serves the model (its /models answer is not JSON)\n`,
      );
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('airs models check names an apiKeyEnv whose variable is unset as airs serve does, and exits 2 as it does', async () => {
    const box = newBox('airs-models-check-unset');
    box.writeConfig({ models: models().filter((model) => model.id === 'good') });
    const checked = await runCli(box, ['models', 'check']);
    const served = await runCli(box, ['serve', '--port', '0']);
    expect(checked.code).toBe(2);
    expect(checked.stdout).toBe('');
    expect(checked.stderr).toMatch(
      /^airs: bad configuration: config file \S+: models\[0\]\.apiKeyEnv \(model "good"\): environment variable UPSTREAM_KEY is not set\n$/,
    );
    expect(served.code).toBe(2);
    expect(checked.stderr).toBe(served.stderr);
  });

  it('airs serve logs one line per upstream problem at start, serves anyway, shows each state on /readyz, and airs ask says the upstream refused the request', async () => {
    const box = newBox('airs-serve-check');
    box.writeConfig({ models: models() });
    const server = await startServer(box, { env: { UPSTREAM_KEY: upstreamKey } });
    // Served at once: the check comes after the start and never makes the server unready.
    const early = await fetch(`${server.url}/readyz`);
    expect(early.status).toBe(200);

    await stderrShowing(server, /model bad-key: its upstream/);
    const problems = logLines(server).filter((line) => line.level === 40 && line.msg.startsWith('model '));
    expect(problems.map((line) => line.model).sort()).toEqual(['bad-key', 'down', 'no-v1']);
    const noV1 = problems.find((line) => line.model === 'no-v1');
    expect(noV1?.msg).toBe(
      `model no-v1: its upstream ${upstream.rootUrl} answered 404: is \`/v1\` missing from its baseUrl?`,
    );
    expect(problems.find((line) => line.model === 'down')?.msg).toMatch(
      /^model down: its upstream http:\/\/127\.0\.0\.1:\d+\/v1 refused the connection \(connect ECONNREFUSED 127\.0\.0\.1:\d+\)$/,
    );

    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    const body = (await ready.json()) as {
      status: string;
      upstreams: Record<string, { state: string; cause?: string }>;
    };
    expect(body.status).toBe('ready');
    expect(body.upstreams).toEqual({
      good: { state: 'ok', seen_at: expect.any(String) },
      'no-v1': {
        state: 'problem',
        cause: 'answered 404: is `/v1` missing from its baseUrl?',
        seen_at: expect.any(String),
      },
      down: { state: 'problem', cause: 'refused the connection', seen_at: expect.any(String) },
      'bad-key': { state: 'problem', cause: expect.stringMatching(/^answered 401/), seen_at: expect.any(String) },
    });
    // The probe has no key: it never shows an upstream's URL.
    expect(JSON.stringify(body)).not.toContain('127.0.0.1');

    const { key } = await createAccountWithKey(box, 'ask-no-v1@example.com');
    const before = upstream.hits('POST /chat/completions');
    const asked = await runCli(box, ['ask', '--url', server.url, '--key', key, '--model', 'no-v1', 'hi'], {
      env: { UPSTREAM_KEY: upstreamKey },
    });
    expect(asked.code).toBe(1);
    expect(asked.stdout).toBe('');
    expect(asked.stderr).toMatch(
      /^airs: 500 server_error: processing of request req_\S+ failed: the model's upstream refused the request \(404\)\n$/,
    );
    // One call, however many retries the model and the queue allow.
    expect(upstream.hits('POST /chat/completions') - before).toBe(1);

    // The official SDK hears the same words, on both OpenAI faces.
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: key, maxRetries: 0 });
    const refused = await client.chat.completions
      .create({ model: 'no-v1', messages: [{ role: 'user', content: 'hi' }] })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.APIError);
    expect((refused as InstanceType<typeof OpenAI.APIError>).status).toBe(500);
    expect((refused as Error).message).toMatch(/failed: the model's upstream refused the request \(404\)$/);
    const response = await client.responses.create({ model: 'no-v1', input: 'hi' });
    expect(response.status).toBe('failed');
    expect(response.error?.message).toMatch(
      /^processing of request resp_\S+ failed: the model's upstream refused the request \(404\)$/,
    );
    await server.stop();
    // The failures as the log holds them fold into the views the store kept (what the caller is told included).
    const verified = await runCli(box, ['replay', '--verify']);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    const replayed = await runCli(box, ['replay', '--json']);
    expect(replayed.stdout).toContain("the model's upstream refused the request (404)");
  });

  it('airs serve --processes 2 checks each upstream once, not once per process', async () => {
    const box = newBox('airs-serve-check-many');
    box.writeConfig({ models: models().filter((model) => model.id === 'good' || model.id === 'no-v1') });
    const before = upstream.hits('GET /v1/models');
    const beforeRoot = upstream.hits('GET /models');
    const server = await startServer(box, { env: { UPSTREAM_KEY: upstreamKey }, args: ['--processes', '2'] });
    await stderrShowing(server, /model no-v1: its upstream/);
    // Give a second check, were there one, the time to be made and logged.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(upstream.hits('GET /v1/models') - before).toBe(1);
    expect(upstream.hits('GET /models') - beforeRoot).toBe(1);
    expect(logLines(server).filter((line) => line.msg.startsWith('model no-v1:'))).toHaveLength(1);
    // Every process shows what the one check found.
    for (let i = 0; i < 4; i++) {
      const body = (await (await fetch(`${server.url}/readyz`)).json()) as {
        upstreams: Record<string, { state: string }>;
      };
      expect(body.upstreams['no-v1']?.state).toBe('problem');
      expect(body.upstreams.good?.state).toBe('ok');
    }
    await server.stop();
  });
});
