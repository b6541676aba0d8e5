import { describe, expect, it } from 'vitest';
import { batchEndpoints } from '../../../src/adapters/http/openai/batchEndpoints.js';
import { memoryFileBytes } from '../../../src/adapters/memory/fileBytes.js';
import { jsonLines } from '../../../src/app/batches/jsonLines.js';
import { createLineInputs, lineReferenceOf, lineReferenceText } from '../../../src/app/batches/lineInput.js';
import { modelInputOf, storedInputOf } from '../../../src/app/storedInput.js';

const endpoint = '/v1/chat/completions';
const chatLine = (customId: string, body: Record<string, unknown>) =>
  JSON.stringify({ custom_id: customId, method: 'POST', url: endpoint, body });

const rules = (modelIds: string[]) => ({
  endpoints: batchEndpoints,
  rules: { modelIds, maxPromptChars: 10_000, maxPromptBytes: 40_000 },
  providerOf: () => 'openai',
});

/** A file of these lines (and a blank one) stored under `fileId`, and each line's reference as its request keeps it. */
const stored = async (lines: readonly string[]) => {
  const files = memoryFileBytes();
  const text = `${lines[0]}\n\n${lines.slice(1).join('\n')}\n`;
  async function* chunks() {
    yield Buffer.from(text);
  }
  await files.write('file-in', chunks(), 1_000_000, 1);
  const references: string[] = [];
  async function* again() {
    yield Buffer.from(text);
  }
  for await (const line of jsonLines(again(), 10_000))
    if ('text' in line)
      references.push(
        lineReferenceText({
          file: 'file-in',
          offset: line.offset,
          bytes: line.bytes.byteLength,
          line: line.line,
          endpoint,
        }),
      );
  return { files, references };
};

/** A request body's bounds (contract 15's defaults): a line's body gets them too. */
const jsonBounds = { maxDepth: 64, maxValues: 100_000 };

describe("a batch line's input, read from its input file when its attempt starts", () => {
  const conversation = {
    model: 'gpt',
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'héllo 日本' },
    ],
    temperature: 0.2,
  };

  it('is what validation took the line for: the model gets what a submit of its body would have stored', async () => {
    const { files, references } = await stored([
      chatLine('a', { model: 'gpt', messages: [{ role: 'user', content: 'first' }] }),
      chatLine('b', conversation),
    ]);
    const read = createLineInputs({ files, ...rules(['gpt']), maxLineBytes: 10_000, jsonBounds });
    const second = await read(references[1] as string);
    const parsed = batchEndpoints.check(endpoint, conversation);
    if (!('model' in parsed)) throw new Error('the body should parse');
    const asStored = storedInputOf(parsed);
    expect(second).toEqual(modelInputOf(asStored.text, asStored.kind));
    expect(second).toMatchObject({ prompt: 'héllo 日本', params: { temperature: 0.2 } });
    expect(await read(references[0] as string)).toMatchObject({ prompt: 'first' });
    // The reference names the line as the file numbers it (the blank line counted).
    expect(references.map((text) => lineReferenceOf(text)?.line)).toEqual([1, 3]);
  });

  it("fails for good, in its caller's words, when the line no longer validates (its model was removed from the config)", async () => {
    const { files, references } = await stored([chatLine('a', conversation)]);
    const read = createLineInputs({ files, ...rules(['other']), maxLineBytes: 10_000, jsonBounds });
    const outcome = await read(references[0] as string);
    expect(outcome).toMatchObject({ permanent: true });
    expect(outcome).toHaveProperty('said', expect.stringMatching(/^line 1 no longer validates: unknown model "gpt"/));
  });

  it('fails for good when its bytes are gone, its reference is damaged, or the file holds other bytes there', async () => {
    const { files, references } = await stored([chatLine('a', conversation)]);
    const read = createLineInputs({ files, ...rules(['gpt']), maxLineBytes: 10_000, jsonBounds });
    const reference = lineReferenceOf(references[0] as string);
    if (reference === undefined) throw new Error('no reference');
    const failures = [
      await read('{"file":"file-in"}'),
      await read('not json'),
      await read(lineReferenceText({ ...reference, bytes: 20_000 })),
      await read(lineReferenceText({ ...reference, offset: reference.offset + 1 })),
      await read(lineReferenceText({ ...reference, endpoint: '/v1/embeddings' })),
    ];
    await files.remove('file-in');
    failures.push(await read(references[0] as string));
    for (const failure of failures) expect(failure).toMatchObject({ permanent: true });
    expect(failures.map((failure) => ('reason' in failure ? failure.reason : ''))).toEqual([
      'its line reference is damaged',
      'its line reference is damaged',
      'its line reference is damaged',
      expect.stringMatching(/^line 1 no longer validates: line 1 is not valid JSON/),
      "its batch's endpoint /v1/embeddings is not served",
      'the input file file-in is gone',
    ]);
  });
});
