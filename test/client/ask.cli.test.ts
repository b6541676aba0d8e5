import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  binPath,
  type CliResult,
  createAccountWithKey,
  killChildren,
  runCli,
  type Sandbox,
  type ServerProcess,
  sandbox,
  startServer,
} from '../support/processes.js';
import { scriptedServer } from './support.js';

/** `airs ask` as a user runs it: the built CLI as a child process against a real `airs serve` child on 127.0.0.1. */

/** Runs the CLI with `input` on its stdin (the shared helper gives children no stdin). */
const runCliWithStdin = (box: Sandbox, args: readonly string[], input: string, env: Record<string, string> = {}) =>
  new Promise<CliResult>((resolve, reject) => {
    const child = spawn(process.execPath, [binPath, ...args], {
      cwd: box.dir,
      env: box.env(env),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(input);
  });

/** A failure as the contract wants it: nothing on stdout and exactly one line on stderr. */
const expectOneLineFailure = (result: CliResult, code: number, message: RegExp) => {
  expect(result.code, result.stderr).toBe(code);
  expect(result.stdout).toBe('');
  expect(result.stderr.trimEnd().split('\n'), result.stderr).toHaveLength(1);
  expect(result.stderr).toMatch(message);
};

describe('airs ask', { timeout: 60_000 }, () => {
  let box: Sandbox;
  let server: ServerProcess;
  let key: string;
  beforeAll(async () => {
    box = sandbox('airs-ask');
    // The server advises 1 s between polls (Retry-After), so a request still queued at the first poll costs 1 s.
    // `doomed` times out on its only attempt: a request that fails for good.
    box.writeConfig({
      pollIntervalSeconds: 1,
      processing: { maxAttempts: 1 },
      models: [
        { id: 'echo', provider: 'echo' },
        { id: 'echo-slow', provider: 'echo', delayMs: 5_000 },
        { id: 'doomed', provider: 'echo', delayMs: 10_000, timeoutMs: 1 },
      ],
    });
    server = await startServer(box);
    ({ key } = await createAccountWithKey(box, 'ask@example.com'));
  });
  afterAll(async () => {
    await server?.stop();
    await killChildren();
    box?.remove();
  });

  it('prints exactly the response and a newline on stdout, and nothing on stderr when stderr is not a terminal', async () => {
    const result = await runCli(box, ['ask', '--model', 'echo', '--url', server.url, '--key', key, 'hello']);

    expect(result).toEqual({ code: 0, stdout: 'hello\n', stderr: '' });
  });

  it('takes the server and the key from AIRS_URL and AIRS_API_KEY', async () => {
    const result = await runCli(box, ['ask', '--model', 'echo', 'from the environment'], {
      env: { AIRS_URL: server.url, AIRS_API_KEY: key },
    });

    expect(result).toEqual({ code: 0, stdout: 'from the environment\n', stderr: '' });
  });

  it('reads the prompt from stdin when it is -, without the trailing newline the shell adds', async () => {
    const result = await runCliWithStdin(
      box,
      ['ask', '--model', 'echo', '--url', server.url, '-'],
      'line one\nline two\n',
      {
        AIRS_API_KEY: key,
      },
    );

    expect(result).toEqual({ code: 0, stdout: 'line one\nline two\n', stderr: '' });
  });

  it('prints the completed poll answer as one JSON document with --json', async () => {
    const result = await runCli(box, ['ask', '--model', 'echo', '--url', server.url, '--key', key, '--json', 'hi']);

    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    const document = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(document).toMatchObject({ status: 'completed', model: 'echo', response: 'hi' });
    expect(document.req_id).toMatch(/^req_/);
  });

  it('exits 4 with one line on stderr when the key is refused (401)', async () => {
    const result = await runCli(box, ['ask', '--model', 'echo', '--url', server.url, '--key', 'sk_wrong', 'hi']);

    expectOneLineFailure(result, 4, /^airs: 401 unauthorized: /);
  });

  it('exits 1 with the known models on stderr when the model is unknown (400)', async () => {
    const result = await runCli(box, ['ask', '--model', 'no-such-model', '--url', server.url, '--key', key, 'hi']);

    expectOneLineFailure(result, 1, /^airs: 400 invalid_request: .*echo/);
  });

  it('exits 1 at once with the server’s message when the request failed for good', async () => {
    const started = Date.now();
    const result = await runCli(box, ['ask', '--model', 'doomed', '--url', server.url, '--key', key, 'hi']);

    expectOneLineFailure(result, 1, /failed; submit it again/);
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('exits 2 when no key is given by --key or AIRS_API_KEY', async () => {
    const result = await runCli(box, ['ask', '--model', 'echo', '--url', server.url, 'hi']);

    expectOneLineFailure(result, 2, /AIRS_API_KEY/);
  });

  it('exits 2 on usage errors: no --model, no prompt, a --timeout that is not a positive number', async () => {
    const results = await Promise.all([
      runCli(box, ['ask', '--url', server.url, '--key', key, 'hi']),
      runCli(box, ['ask', '--model', 'echo', '--url', server.url, '--key', key]),
      runCli(box, ['ask', '--model', 'echo', '--url', server.url, '--key', key, '--timeout', 'soon', 'hi']),
    ]);

    for (const result of results) expect(result.code, result.stderr).toBe(2);
    expect(results.map((result) => result.stdout)).toEqual(['', '', '']);
  });

  it('exits 6 when the response is not ready within --timeout', async () => {
    const result = await runCli(box, [
      'ask',
      '--model',
      'echo-slow',
      '--url',
      server.url,
      '--key',
      key,
      '--timeout',
      '0.5',
      'too slow',
    ]);

    expectOneLineFailure(result, 6, /did not complete within 0\.5 s/);
  });

  it('sends an Idempotency-Key with its submit, a new one each time', async () => {
    const keys: unknown[] = [];
    const recorder = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        response.writeHead(request.method === 'POST' ? 202 : 200, { 'content-type': 'application/json' });
        if (request.method === 'POST') {
          keys.push(request.headers['idempotency-key']);
          response.end(JSON.stringify({ request_id: 'req_recorded', model: 'echo' }));
        } else {
          response.end(JSON.stringify({ req_id: 'req_recorded', status: 'completed', model: 'echo', response: 'ok' }));
        }
      });
    });
    await new Promise<void>((resolve) => recorder.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(recorder.address() as AddressInfo).port}`;
    try {
      for (let run = 0; run < 2; run++) {
        const result = await runCli(box, ['ask', '--model', 'echo', '--url', url, '--key', key, 'hi']);
        expect(result).toEqual({ code: 0, stdout: 'ok\n', stderr: '' });
      }
    } finally {
      recorder.closeAllConnections();
      recorder.close();
    }
    expect(keys).toHaveLength(2);
    for (const sent of keys) expect(sent).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[0]).not.toBe(keys[1]);
  });

  it('answers a repeat with the same --idempotency-key and prompt from the same request; another prompt with it exits 1 with 422', async () => {
    const args = [
      'ask',
      '--model',
      'echo',
      '--url',
      server.url,
      '--key',
      key,
      '--idempotency-key',
      `ask-${Date.now()}`,
    ];
    const first = await runCli(box, [...args, '--json', 'the same job']);
    const again = await runCli(box, [...args, '--json', 'the same job']);
    const other = await runCli(box, [...args, 'another job']);

    expect(first.code, first.stderr).toBe(0);
    expect(again.code, again.stderr).toBe(0);
    const [a, b] = [first, again].map((result) => JSON.parse(result.stdout) as { req_id: string; response: string });
    expect(b).toEqual(a);
    expect(a?.response).toBe('the same job');
    expectOneLineFailure(other, 1, /^airs: 422 idempotency_key_reused: /);
  });

  it('exits 2 when --idempotency-key is not 1 to 255 visible ASCII characters', async () => {
    const result = await runCli(box, [
      'ask',
      '--model',
      'echo',
      '--url',
      server.url,
      '--key',
      key,
      '--idempotency-key',
      'has space',
      'hi',
    ]);

    expectOneLineFailure(result, 2, /--idempotency-key/);
  });

  it('exits 1 with a one-line message when nothing listens at the URL', async () => {
    const closed = await scriptedServer([]);
    await closed.close();

    const result = await runCli(box, ['ask', '--model', 'echo', '--url', closed.url, '--key', key, 'hi']);

    expectOneLineFailure(result, 1, new RegExp(`cannot reach ${closed.url}`));
  });
});
