import { Effect } from 'effect';
import { describe, expect, it } from 'vitest';
import { AirsError, AirsTimeoutError, createClient, type PollInfo } from '../../src/client/index.js';
import { clientOf, startClientApp as start } from './inProcessApp.js';
import { inProcessFetch } from './support.js';

describe('the client against the real service in-process', { timeout: 30_000 }, () => {
  it('submits a prompt, gets a request id from the 202 answer, and finds the completed response by polling', async () => {
    const app = await start();
    const { client } = await clientOf(app);

    const submitted = await client.submit('echo', 'Hello, airs');
    expect(submitted).toMatchObject({ model: 'echo' });
    expect(submitted.request_id).toMatch(/^req_/);

    await app.processor.idle();
    const body = await client.get(submitted.request_id);
    expect(body).toMatchObject({
      req_id: submitted.request_id,
      status: 'completed',
      model: 'echo',
      response: 'Hello, airs',
    });
  });

  it('pauses briefly after the 202, so a fast model’s answer is read on the first poll without a 5 s wait', async () => {
    const app = await start();
    const { client, delays, calls } = await clientOf(app, {
      firstPollDelayMs: 200,
      onSleep: () => app.processor.idle(),
    });
    const done = await client.run('echo', 'quick');
    expect(done).toMatchObject({ status: 'completed', response: 'quick' });
    expect(delays).toEqual([200]);
    expect(calls.filter((call) => call.startsWith('GET'))).toHaveLength(1);
  });

  it('waits the 5 seconds a queued answer advises in Retry-After, then reads the completed response', async () => {
    const app = await start();
    const { client, delays } = await clientOf(app, { onSleep: () => app.processor.idle() });
    const polls: PollInfo[] = [];

    const done = await client.run('soon', 'take your time', { onPoll: (info) => polls.push(info) });

    expect(done).toMatchObject({ status: 'completed', model: 'soon', response: 'take your time' });
    expect(polls.map((poll) => poll.body.status)).toEqual(['queued', 'completed']);
    expect(polls.map((poll) => poll.nextPollInMs)).toEqual([5_000, undefined]);
    expect(delays).toEqual([5_000]);
  });

  it('polls at the interval the server advises in Retry-After, and times out with a typed error at the deadline', async () => {
    const app = await start({ pollIntervalSeconds: 2 });
    const { client, delays, calls } = await clientOf(app);
    const { request_id } = await client.submit('slow', 'never in time');

    const failure = await client.wait(request_id, { timeoutMs: 7_000 }).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(AirsTimeoutError);
    expect(failure).toMatchObject({ reqId: request_id, polls: 4, timeoutMs: 7_000 });
    // Three full intervals, then only what was left before the deadline; no poll at or after the deadline.
    expect(delays).toEqual([2_000, 2_000, 2_000, 1_000]);
    expect(calls.filter((call) => call.startsWith('GET'))).toHaveLength(4);
  });

  it('fails at once, without sleeping or retrying, on 400 for an unknown model or an empty prompt', async () => {
    const app = await start();
    const { client, delays, calls } = await clientOf(app);

    const unknown = await client.submit('no-such-model', 'hi').catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(AirsError);
    expect(unknown).toMatchObject({ status: 400, code: 'invalid_request' });
    expect((unknown as AirsError).message).toMatch(/echo/);

    const empty = await client.run('echo', '').catch((error: unknown) => error);
    expect(empty).toMatchObject({ name: 'AirsError', status: 400, code: 'invalid_request' });

    expect(calls).toHaveLength(2);
    expect(delays).toEqual([]);
  });

  it('fails at once on 401 for an unknown key and on 403 for a suspended account', async () => {
    const app = await start();
    const http = inProcessFetch(app);
    const clientWith = (apiKey: string) =>
      createClient({
        baseUrl: 'http://airs.test',
        apiKey,
        fetch: http.fetch,
        sleep: () => Promise.reject(new Error('must not sleep')),
      });

    const unauthorized = await clientWith('sk_not_a_real_key')
      .submit('echo', 'hi')
      .catch((error: unknown) => error);
    expect(unauthorized).toBeInstanceOf(AirsError);
    expect(unauthorized).toMatchObject({ status: 401, code: 'unauthorized' });

    const suspended = await app.account();
    await Effect.runPromise(app.accounts.suspend(suspended.accountId));
    await expect(clientWith(suspended.key).submit('echo', 'hi')).rejects.toMatchObject({
      name: 'AirsError',
      status: 403,
      code: 'forbidden',
    });
    expect(http.calls).toEqual(['POST /v1/ai', 'POST /v1/ai']);
  });

  it('fails at once with 404 not_found when waiting for a request id the service does not know', async () => {
    const app = await start();
    const { client, delays } = await clientOf(app);

    const failure = await client.wait('req_doesnotexist').catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(AirsError);
    expect(failure).toMatchObject({ status: 404, code: 'not_found' });
    expect(delays).toEqual([]);
  });

  it('reports a request that failed for good at once, as the server marks it final', async () => {
    const app = await start({
      models: [{ id: 'doomed', provider: 'echo', delayMs: 10_000, timeoutMs: 1 }],
      processing: { concurrency: 4, maxAttempts: 1 },
    });
    const { client, delays, retries } = await clientOf(app);
    const { request_id } = await client.submit('doomed', 'this will time out');
    await app.processor.idle();

    const failure = await client.wait(request_id).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(AirsError);
    expect(failure).toMatchObject({ status: 500, code: 'server_error', details: { final: true } });
    expect((failure as Error).message).toMatch(/failed; submit it again/);
    expect(delays).toEqual([]);
    expect(retries).toEqual([]);
  });

  it('stops polling when the signal aborts during a wait and rejects with the signal’s reason', async () => {
    const app = await start();
    const controller = new AbortController();
    const reason = new Error('user pressed ctrl-c');
    const { client, delays, calls } = await clientOf(app, {
      onSleep: (_ms, index) => {
        if (index === 2) controller.abort(reason);
      },
    });
    const { request_id } = await client.submit('slow', 'never mind');

    await expect(client.wait(request_id, { signal: controller.signal })).rejects.toBe(reason);

    expect(delays).toEqual([5_000, 5_000]);
    expect(calls.filter((call) => call.startsWith('GET'))).toHaveLength(2);
  });

  it('sends nothing when the signal is already aborted', async () => {
    const app = await start();
    const { client, calls } = await clientOf(app);
    const controller = new AbortController();
    controller.abort();

    const failure = await client.run('echo', 'hi', { signal: controller.signal }).catch((error: unknown) => error);

    expect(failure).toMatchObject({ name: 'AbortError' });
    expect(calls).toEqual([]);
  });
});
