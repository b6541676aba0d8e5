import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultPlans } from '../../src/domain/plans.js';
import { type TestApp, type TestConfig, testApps } from '../support/testApp.js';

/**
 * Contract 15's bounds on what a body may cost, on both faces, in process: JSON depth and value count (refused from
 * the bytes, before parsing), and the prompt's size in UTF-8 beside its length in characters.
 */

const generous: TestConfig = {
  plans: { ...defaultPlans, free: { ...defaultPlans.free, submitsPerMinute: 10_000 } },
};

/** `levels` arrays inside each other around a zero: `[[0]]` is two levels. */
const nestedArrays = (levels: number) => `${'['.repeat(levels)}0${']'.repeat(levels)}`;

type Face = {
  readonly name: string;
  readonly path: string;
  /** A body for this face with `extra` (raw JSON) as a field it ignores (`metadata` on /v1/ai; on /v1/responses,
   * which keeps its metadata, an unknown field); the top object and that field are 2 levels. */
  body(extra: string): string;
  /** The message and details (or param) of an error answer. */
  errorOf(answer: Record<string, unknown>): { message: string; details?: Record<string, unknown> };
  readonly accepted: number;
};

const faces: Face[] = [
  {
    name: 'POST /v1/ai',
    path: '/v1/ai',
    body: (extra) => `{"model":"echo","prompt":"hello","metadata":${extra}}`,
    errorOf: (answer) => answer.error as { message: string; details?: Record<string, unknown> },
    accepted: 202,
  },
  {
    name: 'POST /v1/responses',
    path: '/v1/responses',
    body: (extra) => `{"model":"echo","input":"hello","background":true,"extra":${extra}}`,
    errorOf: (answer) => answer.error as { message: string },
    accepted: 200,
  },
];

const post = async (app: TestApp, key: string, face: Face, body: string, headers: Record<string, string> = {}) => {
  const response = await app.call('POST', face.path, { key, body, headers });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, unknown>,
  };
};

describe.each(faces)('JSON bounds on $name', (face) => {
  const start = testApps();

  it('takes a body nested exactly 64 levels deep and refuses one level more with 400 invalid_request naming maxJsonDepth', async () => {
    const app = await start({ config: generous });
    const { key } = await app.account();
    // The top object is level 1: metadata nested 63 levels makes 64 in all.
    expect((await post(app, key, face, face.body(nestedArrays(63)))).status).toBe(face.accepted);
    const refused = await post(app, key, face, face.body(nestedArrays(64)));
    expect(refused.status).toBe(400);
    expect(face.errorOf(refused.body).message).toBe(
      'the JSON body is nested deeper than 64 levels, the limit (maxJsonDepth)',
    );
    expect((refused.body.error as { code: string }).code).toBe('invalid_request');
  });

  it('refuses an array nested 1,000,000 levels deep (2 MB, under maxBodyBytes) with 400 naming maxJsonDepth', async () => {
    const app = await start({ config: generous });
    const { key } = await app.account();
    const refused = await post(app, key, face, face.body(nestedArrays(1_000_000)));
    expect(refused.status).toBe(400);
    expect(face.errorOf(refused.body).message).toContain('maxJsonDepth');
  });

  it('takes a body of exactly 100,000 values and refuses one value more with 400 naming maxJsonValues', async () => {
    const app = await start({ config: generous });
    const { key } = await app.account();
    // Besides the metadata's zeros: the top object, its 3 (or 4) other members and the metadata array itself.
    const others = face.path === '/v1/ai' ? 4 : 5;
    const zeros = (n: number) => `[${Array.from({ length: n }, () => '0').join(',')}]`;
    expect((await post(app, key, face, face.body(zeros(100_000 - others)))).status).toBe(face.accepted);
    const refused = await post(app, key, face, face.body(zeros(100_001 - others)));
    expect(refused.status).toBe(400);
    expect(face.errorOf(refused.body).message).toBe(
      'the JSON body holds more than 100000 values, the limit (maxJsonValues)',
    );
  });

  it('applies bounds set in the config: maxJsonDepth 8 refuses 9 levels, maxJsonValues 20 refuses more values', async () => {
    const app = await start({ config: { ...generous, maxJsonDepth: 8, maxJsonValues: 20 } });
    const { key } = await app.account();
    const tooDeep = await post(app, key, face, face.body(nestedArrays(8)));
    expect(face.errorOf(tooDeep.body).message).toContain('deeper than 8 levels');
    expect((await post(app, key, face, face.body(nestedArrays(7)))).status).toBe(face.accepted);
    const tooWide = await post(app, key, face, face.body(`[${'1,'.repeat(19)}1]`));
    expect(face.errorOf(tooWide.body).message).toContain('more than 20 values');
  });

  it('with the default bounds, refuses a deep body sent with an Idempotency-Key with 400, not a fault, before it is hashed', async () => {
    const app = await start({ config: generous });
    const { key } = await app.account();
    const refused = await post(app, key, face, face.body(nestedArrays(100_000)), { 'idempotency-key': 'deep-1' });
    expect(refused.status).toBe(400);
    expect(face.errorOf(refused.body).message).toContain('maxJsonDepth');
  });

  it('with maxJsonDepth raised, hashes an idempotent body nested 100,000 levels deep without a fault, and replays its repeat', async () => {
    const app = await start({ config: { ...generous, maxJsonDepth: 100_000 } });
    const { key } = await app.account();
    const body = face.body(nestedArrays(99_000));
    const first = await post(app, key, face, body, { 'idempotency-key': 'deep-2' });
    expect(first.status).toBe(face.accepted);
    const again = await post(app, key, face, body, { 'idempotency-key': 'deep-2' });
    expect(again.status).toBe(face.accepted);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  });
});

/** The bytes of every file under `dir`. */
const bytesUnder = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce(
    (sum, entry) =>
      sum + (entry.isDirectory() ? bytesUnder(join(dir, entry.name)) : statSync(join(dir, entry.name)).size),
    0,
  );

describe('The prompt size in bytes (maxPromptBytes, default 1 MiB of UTF-8)', () => {
  const start = testApps();
  const euros = (n: number) => '€'.repeat(n);

  it("refuses a prompt of 1,000,000 € (3 MB of UTF-8, within maxPromptChars) on /v1/ai with 400 saying the limit and the size, and stores nothing in LMDB's files", async () => {
    // LMDB: what is stored is measured as the data directory's bytes.
    const app = await start({ store: 'lmdb', config: generous });
    const { key } = await app.account();
    const before = bytesUnder(app.dataDir);
    for (let i = 0; i < 3; i++) {
      const response = await app.call('POST', '/v1/ai', { key, body: { model: 'echo', prompt: euros(1_000_000) } });
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({
        error: {
          code: 'invalid_request',
          message: 'prompt is 3000000 bytes in UTF-8; the maximum is 1048576 (maxPromptBytes)',
          details: { max_prompt_bytes: 1_048_576 },
        },
      });
    }
    expect(bytesUnder(app.dataDir) - before).toBeLessThan(1_000_000);
  });

  it('takes a prompt of exactly 1 MiB of UTF-8 and refuses one byte more', async () => {
    const app = await start({ config: generous });
    const { key } = await app.account();
    // 349,525 € are 1,048,575 bytes; one ASCII letter makes 1 MiB exactly, two make one byte more.
    const fits = await app.call('POST', '/v1/ai', { key, body: { model: 'echo', prompt: `${euros(349_525)}a` } });
    expect(fits.status).toBe(202);
    const over = await app.call('POST', '/v1/ai', { key, body: { model: 'echo', prompt: `${euros(349_525)}ab` } });
    expect(over.status).toBe(400);
    expect(((await over.json()) as { error: { message: string } }).error.message).toBe(
      'prompt is 1048577 bytes in UTF-8; the maximum is 1048576 (maxPromptBytes)',
    );
  });

  it('applies whichever limit is smaller: maxPromptChars for ASCII, maxPromptBytes for €', async () => {
    const app = await start({ config: { ...generous, maxPromptChars: 1_000, maxPromptBytes: 2_000 } });
    const { key } = await app.account();
    const ascii = await app.call('POST', '/v1/ai', { key, body: { model: 'echo', prompt: 'a'.repeat(1_001) } });
    expect(((await ascii.json()) as { error: { message: string } }).error.message).toContain('1001 characters');
    const euro = await app.call('POST', '/v1/ai', { key, body: { model: 'echo', prompt: euros(667) } });
    expect(((await euro.json()) as { error: { message: string } }).error.message).toContain('2001 bytes');
    expect((await app.call('POST', '/v1/ai', { key, body: { model: 'echo', prompt: euros(666) } })).status).toBe(202);
  });

  it('counts an OpenAI-face string input in bytes, with param input', async () => {
    const app = await start({ config: generous });
    const { key } = await app.account();
    const response = await app.call('POST', '/v1/responses', {
      key,
      body: { model: 'echo', input: euros(400_000), background: true },
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: {
        message: 'prompt is 1200000 bytes in UTF-8; the maximum is 1048576 (maxPromptBytes)',
        type: 'invalid_request_error',
        param: 'input',
        code: 'invalid_request',
      },
    });
  });

  it('counts a conversation by the text stored for it (its messages as JSON), with param input', async () => {
    const app = await start({ config: { ...generous, maxPromptBytes: 1_000 } });
    const { key } = await app.account();
    // Two messages of 480 bytes each: 960 bytes of content, over 1,000 once stored with roles and JSON syntax.
    const input = [
      { role: 'user', content: 'u'.repeat(480) },
      { role: 'assistant', content: 'a'.repeat(480) },
    ];
    const response = await app.call('POST', '/v1/responses', { key, body: { model: 'echo', input, background: true } });
    expect(response.status).toBe(400);
    const stored = JSON.stringify({ messages: input.map(({ role, content }) => ({ role, content })) });
    expect(await response.json()).toMatchObject({
      error: {
        message: `the input as stored is ${Buffer.byteLength(stored)} bytes in UTF-8; the maximum is 1000 (maxPromptBytes)`,
        param: 'input',
      },
    });
    const shorter = input.map((m) => ({ ...m, content: m.content.slice(0, 400) }));
    const fits = await app.call('POST', '/v1/responses', {
      key,
      body: { model: 'echo', input: shorter, background: true },
    });
    expect(fits.status).toBe(200);
  });
});
