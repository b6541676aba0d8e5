import { describe, expect, it } from 'vitest';
import { jsonLines } from '../../src/app/batches/jsonLines.js';
import { checkLine } from '../../src/app/batches/lineRules.js';
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
      const lines = await collect(jsonLines(chunksOf(text, size), 1_000));
      expect(lines).toEqual([
        { line: 1, text: '{"a":1}\r' },
        { line: 3, text: '{"b":"é"}' },
        { line: 5, text: '{"c":3}' },
      ]);
    }
  });

  it('report a line longer than the bound without keeping it, and go on with the next', async () => {
    const lines = await collect(jsonLines(chunksOf(`${'x'.repeat(50)}\n{"ok":true}\n`, 7), 20));
    expect(lines).toEqual([
      { line: 1, tooLong: true },
      { line: 2, text: '{"ok":true}' },
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
  const check = (value: unknown, seen = new Set<string>()) =>
    checkLine({ line: 7, text: JSON.stringify(value) }, endpoint, seen, checkBody);

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
    expect(checkLine({ line: 2, text: '{"a":' }, endpoint, new Set(), checkBody)).toMatchObject({
      code: 'invalid_json',
      line: 2,
    });
    expect(checkLine({ line: 3, tooLong: true }, endpoint, new Set(), checkBody)).toMatchObject({
      code: 'invalid_json',
    });
  });
});
