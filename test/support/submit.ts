import { expect } from 'vitest';
import { type CallInit, requestInit } from './testApp.js';

/** What calls the app: a test app in-process (`TestApp.call`), or a served one (`servedAt`). */
export type Caller = { call(method: string, path: string, init?: CallInit): Promise<Response> };

/** A server on a real socket, called with fetch. */
export const servedAt = (url: string): Caller => ({
  call: (method, path, init) => fetch(`${url}${path}`, requestInit(method, init)),
});

/** What a test submits: `echo` and "hello" unless it says, plus any other fields of the body. */
export type Submission = {
  readonly model?: string;
  readonly prompt?: string;
  /** More fields of the body (`ttl_seconds`, `webhook`…). */
  readonly fields?: Record<string, unknown>;
  readonly idempotencyKey?: string;
  /** More headers (`cancel-after`…). */
  readonly headers?: Record<string, string>;
};

/** POST /v1/ai, answered as it is (for tests of the answer itself). */
export const postSubmission = (app: Caller, key: string, submission: Submission = {}): Promise<Response> =>
  app.call('POST', '/v1/ai', {
    key,
    body: { model: submission.model ?? 'echo', prompt: submission.prompt ?? 'hello', ...submission.fields },
    headers: {
      ...submission.headers,
      ...(submission.idempotencyKey === undefined ? {} : { 'idempotency-key': submission.idempotencyKey }),
    },
  });

/** Submits a request through POST /v1/ai and returns its id; the test fails unless it was accepted (202). */
export const submit = async (app: Caller, key: string, submission: Submission = {}): Promise<string> => {
  const answer = await postSubmission(app, key, submission);
  expect(answer.status, await answer.clone().text()).toBe(202);
  return ((await answer.json()) as { request_id: string }).request_id;
};
