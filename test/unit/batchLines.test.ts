import { describe, expect, it } from 'vitest';
import { jsonLines } from '../../src/app/batches/jsonLines.js';
import { checkLine, type LineChecks } from '../../src/app/batches/lineRules.js';
import { InvalidRequest } from '../../src/domain/errors.js';

const chunksOf = async function* (text: string, size: number) {
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
};

const collect = async <T>(source: AsyncIterable<T>) => {
  const out: T[] = [];
  for await (const item of source) out.push(item);
  return out;
};

describe('the lines of a JSONL file', () => {
  it('come numbered as an editor numbers them, whatever the chunks, blank lines skipped', async () => {
    const text = '{"a":1}\r\n\n{"b":"é"}\n   \n{"c":3}';
    for (const size of [1, 2, 3, 7, 100]) {
      const lines = (await collect(jsonLines(chunksOf(text, size), 1_000))).filter((line) => 'text' in line);
      expect(lines.map(({ line, text, offset, bytes }) => ({ line, text, offset, bytes: bytes.byteLength }))).toEqual([
        { line: 1, text: '{"a":1}\r', offset: 0, bytes: 8 },
        { line: 3, text: '{"b":"é"}', offset: 10, bytes: 10 },
        { line: 5, text: '{"c":3}', offset: 25, bytes: 7 },
      ]);
      // With the very bytes each was decoded from (the JSON bounds are checked on them).
      for (const line of lines) expect(Buffer.from(line.bytes).toString('utf8')).toBe(line.text);
    }
  });

  it('say where each line lies in the file: its bytes there are its text, whatever the chunks', async () => {
    const text = `{"a":"ü"}\n\n{"b":2}\r\n{"c":"${'z'.repeat(40)}"}\n{"d":"日本"}`;
    const file = Buffer.from(text);
    for (const size of [1, 5, 16, 1_000]) {
      const lines = await collect(jsonLines(chunksOf(text, size), 1_000));
      expect(lines.map((line) => line.line)).toEqual([1, 3, 4, 5]);
      for (const line of lines) {
        if (!('text' in line)) throw new Error(`line ${line.line} has no text`);
        expect(file.subarray(line.offset, line.offset + line.bytes.byteLength).toString('utf8')).toBe(line.text);
      }
    }
  });

  it('report a line longer than the bound without keeping it, and go on with the next', async () => {
    const lines = await collect(jsonLines(chunksOf(`${'x'.repeat(50)}\n{"ok":true}\n`, 7), 20));
    expect(lines).toEqual([
      { line: 1, tooLong: true },
      { line: 2, text: '{"ok":true}', offset: 51, bytes: expect.anything() },
    ]);
  });

  it('report a line that is not UTF-8', async () => {
    const source = async function* () {
      yield Buffer.from([0x7b, 0xff, 0x7d, 0x0a]);
    };
    expect(await collect(jsonLines(source(), 100))).toEqual([{ line: 1, notUtf8: true }]);
  });
});

describe('a batch line', () => {
  const endpoint = '/v1/chat/completions';
  const body = { model: 'echo', messages: [{ role: 'user', content: 'hi' }] };
  const checkBody = (value: unknown) =>
    (value as { model?: string }).model === 'echo'
      ? { model: 'echo', prompt: 'hi' }
      : new InvalidRequest({ message: 'unknown model', details: { param: 'model' } });
  const checks: LineChecks = {
    endpoint,
    checkBody,
    bounds: { maxDepth: 64, maxValues: 100_000 },
    maxLineBytes: 4 * 1024 * 1024,
  };
  const sourceOf = (line: number, text: string) => ({ line, text, bytes: Buffer.from(text), offset: 0 });
  const check = (value: unknown, seen = new Set<string>()) =>
    checkLine(sourceOf(7, JSON.stringify(value)), checks, seen);

  it('is understood when it names its custom_id, POST, the batch endpoint and a body the route takes', () => {
    expect(check({ custom_id: 'a', method: 'POST', url: endpoint, body })).toMatchObject({ line: 7, customId: 'a' });
  });

  it('is refused with the code and param of what is wrong', () => {
    const line = { custom_id: 'a', method: 'POST', url: endpoint, body };
    expect(check({ ...line, custom_id: '' })).toMatchObject({ code: 'invalid_custom_id', param: 'custom_id', line: 7 });
    expect(check({ ...line, custom_id: 'x'.repeat(513) })).toMatchObject({ code: 'invalid_custom_id' });
    expect(check(line, new Set(['a']))).toMatchObject({ code: 'duplicate_custom_id' });
    expect(check({ ...line, method: 'GET' })).toMatchObject({ code: 'invalid_method', param: 'method' });
    expect(check({ ...line, url: '/v1/embeddings' })).toMatchObject({ code: 'invalid_url', param: 'url' });
    expect(check({ ...line, body: 'text' })).toMatchObject({ code: 'invalid_request', param: 'body' });
    expect(check({ ...line, body: { ...body, stream: true } })).toMatchObject({ param: 'body.stream' });
    expect(check({ ...line, body: { ...body, model: 'nope' } })).toMatchObject({
      code: 'invalid_request',
      param: 'body.model',
      message: 'unknown model',
    });
    expect(checkLine(sourceOf(2, '{"a":'), checks, new Set())).toMatchObject({ code: 'invalid_json', line: 2 });
  });

  it('longer than a request body may be, is refused naming maxBodyBytes, as its body would be', () => {
    expect(checkLine({ line: 3, tooLong: true }, checks, new Set())).toEqual({
      code: 'invalid_request',
      line: 3,
      message: 'line 3 is longer than 4194304 bytes, the limit of a request body (maxBodyBytes)',
      param: 'body',
    });
  });

  it('gets the bounds of depth and values its body would get from its route, from its bytes, before it is parsed', () => {
    const line = { custom_id: 'a', method: 'POST', url: endpoint };
    const nested = (depth: number): unknown => (depth === 0 ? 'x' : [nested(depth - 1)]);
    // The body itself is one level: 63 more nested in one of its fields make a body of depth 64, the route's limit.
    const deep = (levels: number) => ({ ...line, body: { ...body, model: 'echo', tools: nested(levels) } });
    expect(check(deep(63))).toMatchObject({ customId: 'a' });
    expect(check(deep(64))).toEqual({
      code: 'invalid_request',
      line: 7,
      message: 'the JSON body is nested deeper than 64 levels, the limit (maxJsonDepth)',
      param: 'body',
    });
    // The body holds 1 + its members' values: with `model` and `messages` (2 + its one message's 1 + role and
    // content), the rest fills up to 100,000 exactly.
    const wide = (count: number) => ({ ...line, body: { ...body, tools: Array.from({ length: count }, () => 0) } });
    const fixed = 1 + 2 + 1 + 2 + 1;
    expect(check(wide(100_000 - fixed))).toMatchObject({ customId: 'a' });
    expect(check(wide(100_001 - fixed))).toMatchObject({
      code: 'invalid_request',
      message: 'the JSON body holds more than 100000 values, the limit (maxJsonValues)',
      param: 'body',
    });
    // What JSON.parse would have built is never built: a line nested 200,000 levels deep is refused from its bytes.
    const text = `{"custom_id":"a","method":"POST","url":"${endpoint}","body":${'['.repeat(200_000)}${']'.repeat(200_000)}}`;
    expect(checkLine(sourceOf(9, text), checks, new Set())).toMatchObject({ code: 'invalid_request', param: 'body' });
  });
});
