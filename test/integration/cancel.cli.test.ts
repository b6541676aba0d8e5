import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../src/ports/Clock.js';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';
import {
  type CliResult,
  cliJson,
  createAccountWithKey,
  fileSandboxes,
  poll,
  runCli,
  type Sandbox,
  type ServerProcess,
  startServer,
  submit,
} from '../support/processes.js';
import { eventually, startTestApp } from '../support/testApp.js';

/** `airs requests cancel` as an operator runs it: the built CLI against a data directory, with and without a server. */

type CancelJson = {
  req_id: string;
  status: string;
  previous_status: string;
  already_cancelled: boolean;
  model: string;
  account_id: string;
  cancelled_at: string | null;
};
type ReplayJson = { events: Array<{ type: string; reqId?: string }>; final_states: Record<string, string> };

const newBox = fileSandboxes();

/** A failure as the contract wants it: the exit status, nothing on stdout, exactly one line on stderr. */
const expectOneLineFailure = (result: CliResult, code: number, message: RegExp) => {
  expect(result.code, result.stderr).toBe(code);
  expect(result.stdout).toBe('');
  expect(result.stderr.trimEnd().split('\n'), result.stderr).toHaveLength(1);
  expect(result.stderr.trimEnd()).toMatch(message);
};

const requestIdOf = async (url: string, key: string, model: string, prompt: string) => {
  const answer = await submit(url, key, model, prompt);
  expect(answer.status).toBe(202);
  return String(answer.body.request_id);
};

/** The config file's models (the service fills in the defaults). */
const models = [
  { id: 'echo', provider: 'echo' },
  // One at a time and a minute each: the first request is being processed, the next one waits.
  { id: 'echo-slow', provider: 'echo', delayMs: 60_000, timeoutMs: 120_000, maxConcurrency: 1 },
  // Started at once (no limit of its own) and busy for a minute.
  { id: 'echo-busy', provider: 'echo', delayMs: 60_000, timeoutMs: 120_000 },
  // Times out on its only attempt: a request that fails for good.
  { id: 'doomed', provider: 'echo', delayMs: 10_000, timeoutMs: 1 },
];

/** The same models for an app started in-process, with the defaults the config file leaves out. */
const appModels = models.map((model) => ({ delayMs: 0, timeoutMs: 60_000, ...model, provider: 'echo' as const }));

describe('airs requests cancel while the server runs', { timeout: 60_000 }, () => {
  let box: Sandbox;
  let server: ServerProcess;
  let key: string;
  let accountId: string;
  beforeAll(async () => {
    box = newBox('airs-cancel');
    box.writeConfig({ processing: { maxAttempts: 1 }, models });
    ({ key, accountId } = await createAccountWithKey(box, 'cancel@example.com'));
    server = await startServer(box);
  });
  afterAll(async () => {
    // A stop would drain: wait for the minute-long model calls still running.
    await server?.stop('SIGKILL');
  });

  it('cancels a waiting request in one line; the API then answers 404 saying it was cancelled, and replay shows RequestCancelled', async () => {
    await requestIdOf(server.url, key, 'echo-slow', 'keeps the worker busy');
    const reqId = await requestIdOf(server.url, key, 'echo-slow', 'waits its turn');

    const result = await runCli(box, ['requests', 'cancel', reqId]);

    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(
      `request ${reqId} is cancelled (it was waiting; it will not be processed; model echo-slow, account ${accountId})\n`,
    );
    expect(result.stderr).toBe(`airs: data directory ${box.dataDir} (from AIRS_DATA_DIR)\n`);
    const polled = await poll(server.url, key, reqId);
    expect(polled.status).toBe(404);
    expect(polled.body).toMatchObject({ error: { code: 'not_found' } });
    expect(JSON.stringify(polled.body)).toMatch(/cancelled/);
    const replay = await cliJson<ReplayJson>(box, ['replay', '--request', reqId]);
    expect(replay.events.map((event) => event.type)).toEqual(['RequestQueued', 'RequestCancelled']);
    expect(replay.final_states).toEqual({ [reqId]: 'cancelled' });
    const text = await runCli(box, ['replay', '--request', reqId]);
    expect(text.stdout).toMatch(/RequestCancelled/);
  });

  it('cancels a request being processed, with --json as one document', async () => {
    // A free worker takes a new request in the same write that queues it: it is being processed at once.
    const reqId = await requestIdOf(server.url, key, 'echo-busy', 'being worked on');

    const cancelled = await cliJson<CancelJson>(box, ['requests', 'cancel', reqId]);

    expect(cancelled).toMatchObject({
      req_id: reqId,
      status: 'cancelled',
      previous_status: 'processing',
      already_cancelled: false,
      model: 'echo-busy',
      account_id: accountId,
    });
    expect(Date.parse(cancelled.cancelled_at ?? '')).not.toBeNaN();
    const polled = await poll(server.url, key, reqId);
    expect(polled.status).toBe(404);
    expect(JSON.stringify(polled.body)).toMatch(/cancelled/);
  });

  it('says an already cancelled request was already cancelled, and exits 0', async () => {
    const reqId = await requestIdOf(server.url, key, 'echo-slow', 'cancelled twice');
    expect((await runCli(box, ['requests', 'cancel', reqId])).code).toBe(0);

    const again = await runCli(box, ['requests', 'cancel', reqId]);
    const json = await cliJson<CancelJson>(box, ['requests', 'cancel', reqId]);

    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(
      new RegExp(`^request ${reqId} was already cancelled \\(at .+\\); nothing changed\\n$`),
    );
    expect(json).toMatchObject({
      req_id: reqId,
      status: 'cancelled',
      previous_status: 'cancelled',
      already_cancelled: true,
    });
    const replay = await cliJson<ReplayJson>(box, ['replay', '--request', reqId]);
    expect(replay.events.filter((event) => event.type === 'RequestCancelled')).toHaveLength(1);
  });

  it('refuses an unknown id with one line on stderr and exit 1, also with --json', async () => {
    expectOneLineFailure(await runCli(box, ['requests', 'cancel', 'req_unknown']), 1, /^airs: no request req_unknown$/);
    expectOneLineFailure(
      await runCli(box, ['requests', 'cancel', 'req_unknown', '--json']),
      1,
      /^airs: no request req_unknown$/,
    );
  });

  it('refuses a completed request and a failed one with one line saying why, exit 1, and changes nothing', async () => {
    const done = await requestIdOf(server.url, key, 'echo', 'done at once');
    const failed = await requestIdOf(server.url, key, 'doomed', 'fails for good');
    await eventually(async () => ((await poll(server.url, key, done)).status === 200 ? true : undefined));
    await eventually(async () => ((await poll(server.url, key, failed)).status === 500 ? true : undefined), 15_000);

    expectOneLineFailure(
      await runCli(box, ['requests', 'cancel', done]),
      1,
      /cannot be cancelled: it completed at .*only a queued or in-progress request can be cancelled/,
    );
    expectOneLineFailure(await runCli(box, ['requests', 'cancel', failed]), 1, /cannot be cancelled: it failed at /);
    const completed = await poll(server.url, key, done);
    expect(completed.body).toMatchObject({ status: 'completed', response: 'done at once' });
    const replay = await cliJson<ReplayJson>(box, ['replay', '--account', accountId]);
    expect(replay.final_states).toMatchObject({ [done]: 'completed', [failed]: 'failed' });
  });

  it('is a usage error (exit 2) without a request id', async () => {
    const result = await runCli(box, ['requests', 'cancel']);

    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
  });
});

describe('airs requests cancel with no server running', { timeout: 60_000 }, () => {
  it('cancels a request left queued in the data directory; a server started afterwards never processes it and answers 404', async () => {
    const box = newBox('airs-cancel-offline');
    box.writeConfig({ models });
    // A request made while a server ran, which the server gave back to the queue when it stopped (cleanly).
    const app = await startTestApp({ dataDir: box.dataDir, clock: systemClock, config: { models: appModels } });
    const { key } = await app.account();
    const posted = await app.call('POST', '/v1/ai', { key, body: { model: 'echo-slow', prompt: 'left behind' } });
    expect(posted.status).toBe(202);
    const reqId = ((await posted.json()) as { request_id: string }).request_id;
    await app.stop({ keepData: true });

    const result = await runCli(box, ['requests', 'cancel', reqId]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^request ${reqId} is cancelled \\(it was waiting`));

    const server = await startServer(box);
    try {
      const polled = await poll(server.url, key, reqId);
      expect(polled.status).toBe(404);
      expect(JSON.stringify(polled.body)).toMatch(/was cancelled/);
    } finally {
      await server.stop();
    }
    const replay = await cliJson<ReplayJson>(box, ['replay', '--request', reqId]);
    expect(replay.events.map((event) => event.type)).toEqual([
      'RequestQueued',
      'RequestProcessingStarted',
      'RequestReleased',
      'RequestCancelled',
    ]);
    expect((await runCli(box, ['replay', '--verify'])).code).toBe(0);
  });

  it('refuses an expired request with one line saying it expired, exit 1', async () => {
    const box = newBox('airs-cancel-expired');
    // Made two days ago by the clock of the app: its 24 hours are over by the CLI's clock.
    const app = await startTestApp({
      dataDir: box.dataDir,
      clock: new ManualClock(Date.now() - 2 * 86_400_000),
      config: { models: appModels },
    });
    const { key } = await app.account();
    const posted = await app.call('POST', '/v1/ai', { key, body: { model: 'echo-slow', prompt: 'too late' } });
    const reqId = ((await posted.json()) as { request_id: string }).request_id;
    await app.stop({ keepData: true });

    expectOneLineFailure(
      await runCli(box, ['requests', 'cancel', reqId]),
      1,
      new RegExp(`^airs: request ${reqId} cannot be cancelled: it expired at `),
    );
    const replay = await cliJson<ReplayJson>(box, ['replay', '--request', reqId]);
    expect(replay.events.map((event) => event.type)).not.toContain('RequestCancelled');
  });
});

describe('airs requests cancel of a request the server is calling a model for', { timeout: 60_000 }, () => {
  it('makes the server abort the model call in flight within a few seconds, seen by the upstream', async () => {
    const upstream = await startFakeOpenAi({ delayMs: 60_000 });
    try {
      const box = newBox('airs-cancel-upstream');
      box.writeConfig({
        models: [{ id: 'llm', provider: 'openai', baseUrl: upstream.baseUrl, upstreamModel: 'tiny', maxRetries: 0 }],
      });
      const { key } = await createAccountWithKey(box, 'cancel-upstream@example.com');
      const server = await startServer(box);
      const reqId = await requestIdOf(server.url, key, 'llm', 'a long answer');
      await eventually(() => (upstream.received.length === 1 ? true : undefined));
      expect((await runCli(box, ['requests', 'cancel', reqId])).code).toBe(0);
      // The CLI writes to the log; the server sees the cancellation there and aborts its call.
      await eventually(() => (upstream.abandoned() === 1 ? true : undefined), 10_000);
      // Nothing left running: a graceful stop does not wait for the minute-long call.
      expect(await server.stop()).toBe(0);
      const replay = await cliJson<ReplayJson>(box, ['replay', '--request', reqId]);
      expect(replay.final_states).toEqual({ [reqId]: 'cancelled' });
    } finally {
      await upstream.close();
    }
  });
});
