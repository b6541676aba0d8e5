import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FetchLike, SleepFn } from '../../src/client/index.js';
import type { ManualClock } from '../../src/ports/Clock.js';
import type { TestApp } from '../support/testApp.js';

/** Test helpers for the client: time that moves only when the client sleeps, and counted in-process calls. */

/**
 * A `sleep` that never waits: it records each delay the client asks for and moves the manual clock by it (so
 * rate limits refill and deadlines pass). `onSleep` may act at each sleep (abort, let processing finish, …).
 */
export const recordingSleep = (
  clock: ManualClock,
  onSleep?: (ms: number, index: number) => void | Promise<void>,
): { readonly delays: number[]; readonly sleep: SleepFn } => {
  const delays: number[] = [];
  const sleep: SleepFn = async (ms, signal) => {
    signal?.throwIfAborted();
    delays.push(ms);
    clock.advance(ms);
    await onSleep?.(ms, delays.length);
    signal?.throwIfAborted();
  };
  return { delays, sleep };
};

/** The app's in-process handler as `fetch`, remembering each call's method and path. */
export const inProcessFetch = (app: TestApp): { readonly calls: string[]; readonly fetch: FetchLike } => {
  const calls: string[] = [];
  return {
    calls,
    fetch: (input, init) => {
      const url = new URL(input);
      calls.push(`${init.method ?? 'GET'} ${url.pathname}${url.search}`);
      return app.http.request(input, init);
    },
  };
};

export type ScriptedAnswer = {
  readonly status: number;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
};

/**
 * A tiny HTTP server on 127.0.0.1 that answers each call with the next scripted answer (the last one repeats), for
 * answers the real service gives only in rare moments (500, 503, odd bodies).
 */
export const scriptedServer = async (answers: readonly ScriptedAnswer[]) => {
  const seen: Array<{ method: string; url: string; authorization: string | undefined; prefer?: string }> = [];
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    request.resume();
    request.on('end', () => {
      seen.push({
        method: request.method ?? '',
        url: request.url ?? '',
        authorization: request.headers.authorization,
        ...(request.headers.prefer === undefined ? {} : { prefer: String(request.headers.prefer) }),
      });
      const answer = answers[Math.min(seen.length, answers.length) - 1];
      if (answer === undefined) throw new Error('scriptedServer needs at least one answer');
      const body =
        answer.body === undefined ? '' : typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
      response.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      response.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};

export const queued = (reqId = 'req_test', headers?: Record<string, string>): ScriptedAnswer => ({
  status: 200,
  body: { req_id: reqId, status: 'queued', model: 'echo' },
  ...(headers === undefined ? {} : { headers }),
});

export const completed = (reqId = 'req_test', response = 'done'): ScriptedAnswer => ({
  status: 200,
  body: { req_id: reqId, status: 'completed', model: 'echo', response },
});

export const serverError = (status = 500, headers?: Record<string, string>): ScriptedAnswer => ({
  status,
  body: { error: { code: 'server_error', message: 'internal error' } },
  ...(headers === undefined ? {} : { headers }),
});
