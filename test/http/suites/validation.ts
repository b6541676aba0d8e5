import { describe, expect, it } from 'vitest';
import {
  expectError,
  expectRateLimitHeaders,
  streamedBody,
  type Transport,
  useContractApp,
} from '../support/contract.js';

const tooLong = 'p'.repeat(101);

/** Every 400 cause of contract section 2 for a POST body sent as application/json, and what the message names. */
const badBodies: ReadonlyArray<readonly [string, string, RegExp]> = [
  ['malformed JSON', '{"model": "echo", "prompt": ', /JSON/],
  ['an empty body', '', /JSON/],
  ['a JSON array', '[{"model": "echo", "prompt": "hi"}]', /object/],
  ['a JSON string', '"hello"', /object/],
  ['JSON null', 'null', /object/],
  ['a JSON number', '42', /object/],
  ['an object without model', '{"prompt": "hi"}', /model/],
  ['an object without prompt', '{"model": "echo"}', /prompt/],
  ['an object whose model is a number', '{"model": 42, "prompt": "hi"}', /model/],
  ['an object whose model is null', '{"model": null, "prompt": "hi"}', /model/],
  ['an object whose prompt is an array', '{"model": "echo", "prompt": ["hi"]}', /prompt/],
  ['an object whose prompt is null', '{"model": "echo", "prompt": null}', /prompt/],
  ['an object with an empty prompt', '{"model": "echo", "prompt": ""}', /prompt.*empty/],
  ['an object whose prompt is only white space', '{"model": "echo", "prompt": " \\n\\t  "}', /prompt.*empty/],
  ['an object whose prompt is longer than maxPromptChars', `{"model": "echo", "prompt": "${tooLong}"}`, /100/],
];

const badContentTypes: ReadonlyArray<readonly [string, Record<string, string>]> = [
  ['text/plain', { 'content-type': 'text/plain' }],
  ['form-urlencoded', { 'content-type': 'application/x-www-form-urlencoded' }],
  ['application/xml', { 'content-type': 'application/xml' }],
];

/** Input errors (400) and oversized bodies (413), all with the `invalid_request` code. */
export const validationSuite = (transport: Transport) =>
  describe('input validation', () => {
    const env = useContractApp(transport);

    it.each(badBodies)(
      'refuses a POST whose body is %s with 400 invalid_request naming the fault',
      async (_, body, says) => {
        const { key } = await env.app.account();
        const answer = await env.client.call('POST', '/v1/ai', { key, body });
        const error = expectError(answer, 400, 'invalid_request');
        expect(error.message).toMatch(says);
        expectRateLimitHeaders(answer, 'submits', 60);
      },
    );

    it('refuses an unknown model with 400 invalid_request whose message lists the known model ids', async () => {
      const { key } = await env.app.account();
      const answer = await env.client.call('POST', '/v1/ai', { key, body: { model: 'gpt-9', prompt: 'hi' } });
      const error = expectError(answer, 400, 'invalid_request');
      for (const id of ['echo', 'slow', 'doomed']) expect(error.message).toContain(id);
    });

    it.each(badContentTypes)('refuses a POST with Content-Type %s with 400 invalid_request', async (_, headers) => {
      const { key } = await env.app.account();
      const answer = await env.client.call('POST', '/v1/ai', { key, body: { model: 'echo', prompt: 'hi' }, headers });
      expect(expectError(answer, 400, 'invalid_request').message).toMatch(/Content-Type/);
    });

    it('refuses a POST with a JSON body but no Content-Type with 400 invalid_request', async () => {
      const { key } = await env.app.account();
      const answer = await env.client.send('POST', '/v1/ai', {
        headers: { authorization: `Bearer ${key}` },
        body: new TextEncoder().encode('{"model": "echo", "prompt": "hi"}'),
      });
      expect(expectError(answer, 400, 'invalid_request').message).toMatch(/Content-Type/);
    });

    it.each([
      ['missing', '/v1/ai'],
      ['empty', '/v1/ai?req_id='],
      ['missing while another parameter is set', '/v1/ai?id=req_abc'],
    ])('refuses a GET whose req_id is %s with 400 invalid_request', async (_, path) => {
      const { key } = await env.app.account();
      const answer = await env.client.call('GET', path, { key });
      expect(expectError(answer, 400, 'invalid_request').message).toMatch(/req_id/);
      expectRateLimitHeaders(answer, 'polls', 600);
    });

    it('refuses a body over maxBodyBytes sent with Content-Length with 413 invalid_request', async () => {
      const { key } = await env.app.account();
      const body = JSON.stringify({ model: 'echo', prompt: 'x'.repeat(2_000) });
      const answer = await env.client.send('POST', '/v1/ai', {
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
        },
        body,
      });
      const error = expectError(answer, 413, 'invalid_request');
      expect(error.message).toContain('1024');
      expectRateLimitHeaders(answer, 'submits', 60);
    });

    it('refuses a body over maxBodyBytes sent in chunks without Content-Length with 413 invalid_request', async () => {
      const { key } = await env.app.account();
      const answer = await env.client.send('POST', '/v1/ai', {
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        ...streamedBody(JSON.stringify({ model: 'echo', prompt: 'x'.repeat(4_000) })),
      });
      expect(expectError(answer, 413, 'invalid_request').message).toContain('1024');
    });
  });
