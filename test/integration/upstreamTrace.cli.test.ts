import { createHash } from 'node:crypto';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';
import {
  createAccountWithKey,
  fileSandboxes,
  runCli,
  type Sandbox,
  type ServerProcess,
  sleep,
  startServer,
  stderrShowing,
} from '../support/processes.js';

/**
 * What an upstream and an operator can trace of a request, through `airs serve` and the official `openai` SDK: the
 * request's id and trace on each upstream call, the upstream's own words in a failure's reason, and the access line.
 */

const newBox = fileSandboxes();
const traceparentForm = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;
/** The trace id airs gives a request (docs/decisions.md, "Issue 41: trace context"). */
const traceIdOf = (reqId: string) => createHash('sha256').update(reqId).digest('hex').slice(0, 32);

const logLines = (server: ServerProcess) =>
  server
    .stderr()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

/** The access lines of a request once `count` of them are written (a line is written once its answer has gone, which
 * on a busy machine may take a while), or whatever is there after 10 s. */
const accessLinesOf = async (server: ServerProcess, reqId: string, count: number) => {
  const lines = () => logLines(server).filter((line) => line.msg === 'answered' && line.reqId === reqId);
  for (let i = 0; i < 100 && lines().length < count; i++) await sleep(100);
  return lines();
};

describe('Calls an upstream and an operator can trace', { timeout: 60_000 }, () => {
  let upstream: Awaited<ReturnType<typeof startFakeOpenAi>>;
  let box: Sandbox;
  let server: ServerProcess;
  let key: string;
  let accountId: string;
  let client: OpenAI;
  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    box = newBox('airs-upstream-trace');
    box.writeConfig({
      models: [
        { id: 'llama', provider: 'openai', baseUrl: upstream.baseUrl, upstreamModel: 'llama-3-8b' },
        { id: 'wrongname', provider: 'openai', baseUrl: upstream.baseUrl, upstreamModel: 'llama-wrongname' },
      ],
    });
    ({ key, accountId } = await createAccountWithKey(box, 'trace@example.com'));
    server = await startServer(box, { env: { LOG_LEVEL: 'debug' } });
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: key, maxRetries: 0 });
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    await upstream?.close();
  });

  it("each upstream call carries the request's id as X-Request-Id and a traceparent of the request's trace, each call with a span of its own", async () => {
    // Answered 429 once, then retried by the provider within the attempt: two calls of one request.
    const { response } = await client.chat.completions
      .create({ model: 'llama', messages: [{ role: 'user', content: 'rate-limit-once' }] })
      .withResponse();
    const reqId = response.headers.get('x-request-id') ?? '';
    expect(reqId).toMatch(/^req_/);
    const calls = upstream.received.filter((call) => call.body.messages.at(-1)?.content === 'rate-limit-once');
    expect(calls).toHaveLength(2);
    const spans = calls.map((call) => {
      expect(call.requestId).toBe(reqId);
      const parts = traceparentForm.exec(call.traceparent ?? '');
      expect(parts, call.traceparent).not.toBeNull();
      expect(parts?.[1]).toBe(traceIdOf(reqId));
      expect(parts?.[2]).not.toBe('0000000000000000');
      return parts?.[2];
    });
    expect(new Set(spans).size).toBe(2);
  });

  it('an access line names the request, the account and the model, and the trace of a valid incoming traceparent', async () => {
    const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const { response } = await client.chat.completions
      .create(
        { model: 'llama', messages: [{ role: 'user', content: 'traced' }] },
        { headers: { traceparent: `00-${callerTrace}-00f067aa0ba902b7-01` } },
      )
      .withResponse();
    const reqId = response.headers.get('x-request-id') ?? '';
    const polled = await fetch(`${server.url}/v1/ai?req_id=${reqId}`, { headers: { authorization: `Bearer ${key}` } });
    expect(polled.status).toBe(200);
    const answered = await accessLinesOf(server, reqId, 2);
    expect(answered).toEqual([
      expect.objectContaining({
        method: 'POST',
        path: '/v1/chat/completions',
        status: 200,
        account: accountId,
        model: 'llama',
        callerTraceId: callerTrace,
        traceId: traceIdOf(reqId),
      }),
      expect.objectContaining({ method: 'GET', path: '/v1/ai', status: 200, account: accountId, model: 'llama' }),
    ]);
    expect(answered[1]?.callerTraceId).toBeUndefined();

    // The Responses face alike: the create that made the request, and the retrieve that read it.
    const created = await client.responses.create({ model: 'llama', input: 'traced response' });
    await client.responses.retrieve(created.id);
    const responseReqId = `req_${created.id.slice('resp_'.length)}`;
    const lines = await accessLinesOf(server, responseReqId, 2);
    expect(lines).toEqual([
      expect.objectContaining({ method: 'POST', path: '/v1/responses', account: accountId, model: 'llama' }),
      expect.objectContaining({
        method: 'GET',
        path: `/v1/responses/${created.id}`,
        account: accountId,
        model: 'llama',
      }),
    ]);
  });

  it("a request its upstream refuses keeps the upstream's own words in its failure's reason, in the log and in airs replay, and tells its caller no more than before", async () => {
    const refused = await client.chat.completions
      .create({ model: 'wrongname', messages: [{ role: 'user', content: 'vllm 404' }] })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.APIError);
    const { message } = refused as InstanceType<typeof OpenAI.APIError>;
    expect(message).toMatch(/failed: the model's upstream refused the request \(404\)$/);
    expect(message).not.toContain('llama-wrongname');
    const reqId = /request (req_\S+) failed/.exec(message)?.[1] ?? '';
    expect(reqId).not.toBe('');

    const words = 'The model `llama-wrongname` does not exist.';
    await stderrShowing(server, /attempt failed/);
    const failed = logLines(server).find((line) => line.msg === 'attempt failed' && line.reqId === reqId);
    expect(failed?.reason).toBe(`upstream ${upstream.baseUrl} answered 404: ${words}`);

    const replayed = await runCli(box, ['replay', '--request', reqId]);
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(replayed.stdout).toContain(words);
  });
});
