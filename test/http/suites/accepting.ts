import { Effect } from 'effect';
import { describe, expect, it } from 'vitest';
import {
  expectError,
  expectRateLimitHeaders,
  poll,
  requestIdPattern,
  streamedBody,
  submit,
  type Transport,
  useContractApp,
} from '../support/contract.js';

/** The happy path of the wire format: 202 on submit, 200 queued and 200 completed on poll, 500 for a failure. */
export const acceptingSuite = (transport: Transport) =>
  describe('submitting and polling', () => {
    const env = useContractApp(transport);

    it('accepts a valid submission with 202 and a body of exactly request_id and model', async () => {
      const { key } = await env.app.account();
      const answer = await env.client.call('POST', '/v1/ai', { key, body: { model: 'echo', prompt: 'hello' } });
      expect(answer.status).toBe(202);
      expect(answer.headers.get('content-type')).toMatch(/^application\/json\b/);
      expect(answer.body).toEqual({ request_id: expect.stringMatching(requestIdPattern), model: 'echo' });
    });

    it('gives every submission its own unguessable request id', async () => {
      const { key } = await env.app.account();
      const ids = new Set(await Promise.all(Array.from({ length: 20 }, () => submit(env.client, key))));
      expect(ids.size).toBe(20);
    });

    it('answers a poll of a request the model is still working on with 200 queued and Retry-After: 5', async () => {
      const { key } = await env.app.account();
      const reqId = await submit(env.client, key, 'slow');
      const answer = await poll(env.client, key, reqId);
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toMatch(/^application\/json\b/);
      // The specified fields exactly, plus when it was made (an extra field the contract allows).
      expect(answer.body).toEqual({
        req_id: reqId,
        status: 'queued',
        model: 'slow',
        created_at: Math.floor(env.app.clock.now() / 1000),
        service_tier: 'default',
      });
      // Byte for byte as always: the fields in the same order too (being processed: no queue_position).
      expect(Object.keys(answer.body as object)).toEqual(['req_id', 'status', 'model', 'created_at', 'service_tier']);
      expect(answer.headers.get('retry-after')).toBe('5');
    });

    it('answers a poll of a finished request with 200 completed, the generated text, its times and its usage', async () => {
      const { key } = await env.app.account();
      const reqId = await submit(env.client, key, 'echo', 'say this back');
      await env.app.processor.idle();
      const answer = await poll(env.client, key, reqId);
      expect(answer.status).toBe(200);
      const now = Math.floor(env.app.clock.now() / 1000);
      // echo counts words: three in, three out.
      expect(answer.body).toEqual({
        req_id: reqId,
        status: 'completed',
        model: 'echo',
        response: 'say this back',
        created_at: now,
        completed_at: now,
        service_tier: 'default',
        usage: { input_tokens: 3, output_tokens: 3, total_tokens: 6 },
      });
      expect(JSON.stringify(answer.body)).toBe(
        `{"req_id":"${reqId}","status":"completed","model":"echo","response":"say this back","created_at":${now},` +
          `"completed_at":${now},"service_tier":"default","usage":{"input_tokens":3,"output_tokens":3,"total_tokens":6}}`,
      );
      expect(answer.headers.get('retry-after')).toBeNull();
    });

    it('accepts a JSON Content-Type with parameters such as charset', async () => {
      const { key } = await env.app.account();
      const answer = await env.client.call('POST', '/v1/ai', {
        key,
        body: { model: 'echo', prompt: 'hello' },
        headers: { 'content-type': 'application/json; charset=utf-8' },
      });
      expect(answer.status).toBe(202);
    });

    it('accepts a prompt of exactly the configured maximum length', async () => {
      const { key } = await env.app.account();
      const answer = await env.client.call('POST', '/v1/ai', {
        key,
        body: { model: 'echo', prompt: 'p'.repeat(env.app.config.maxPromptChars) },
      });
      expect(answer.status).toBe(202);
    });

    it('accepts extra fields in the body alongside model and prompt', async () => {
      const { key } = await env.app.account();
      const answer = await env.client.call('POST', '/v1/ai', {
        key,
        body: { model: 'echo', prompt: 'hello', temperature: 0.2 },
      });
      expect(answer.status).toBe(202);
      expect(answer.body).toEqual({ request_id: expect.stringMatching(requestIdPattern), model: 'echo' });
      expect(Object.keys(answer.body as object)).toEqual(['request_id', 'model']);
    });

    it('accepts a body sent without Content-Length in chunks when it is within the byte limit', async () => {
      const { key } = await env.app.account();
      const answer = await env.client.send('POST', '/v1/ai', {
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        ...streamedBody(JSON.stringify({ model: 'echo', prompt: 'chunked' }), 8),
      });
      expect(answer.status).toBe(202);
    });

    it('finds the request through any key of the same account right after the 202', async () => {
      const { accountId, key } = await env.app.account('starter');
      const second = await Effect.runPromise(env.app.accounts.createKey(accountId));
      const reqId = await submit(env.client, key, 'slow');
      const answer = await poll(env.client, second.key, reqId);
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ req_id: reqId, status: 'queued' });
    });

    it('answers a poll of a request whose processing failed for good with 500 server_error marked final, no Retry-After and no internals', async () => {
      const { key } = await env.app.account();
      const reqId = await submit(env.client, key, 'doomed');
      await env.app.processor.idle();
      const answer = await poll(env.client, key, reqId);
      const error = expectError(answer, 500, 'server_error');
      expect(error.message).toMatch(/processing/i);
      expect((error as { details?: unknown }).details).toEqual({ final: true });
      expect(answer.headers.get('retry-after')).toBeNull();
      expect(answer.text).not.toMatch(/timed out|timeout|abort|stack|node_modules|\/work\/|\.ts\b|\n\s+at /i);
      expect(answer.text).not.toContain(key);
      expect(answer.text).not.toContain(env.app.dataDir);
      expectRateLimitHeaders(answer, 'polls', 600);
    });
  });
