import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchEndpoints } from '../../src/adapters/http/openai/batchEndpoints.js';
import type { Principal } from '../../src/app/Auth.js';
import { jsonLines } from '../../src/app/batches/jsonLines.js';
import { checkLine, lineChecksOf } from '../../src/app/batches/lineRules.js';
import { isFinalBatch } from '../../src/domain/batch/state.js';
import { systemClock } from '../../src/ports/Clock.js';
import { startTestApp, type TestApp } from '../support/testApp.js';

/**
 * Hostile lines of a batch's input file (issue 40): deep and wide at, under and over the bounds a body gets, huge
 * strings, escapes, `__proto__` and `constructor` keys, numbers at the edges, values that are not objects, bytes that
 * are not UTF-8, bodies the routes refuse. Checking a line never throws and answers a line or a line's error; a batch
 * of such lines always ends (its validation fails, or it runs) on the memory store.
 */

const endpoint = '/v1/chat/completions';
const bounds = { maxDepth: 64, maxValues: 100_000 };
const maxLineBytes = 4 * 1024 * 1024;

/** Text a line may be made of, as JSON writes it (so nothing here is cut by the generator itself). */
const json = (value: unknown) => JSON.stringify(value);

/** `levels` containers, arrays or objects, around `inner`, as JSON text (no recursion: any depth). */
const nestedText = (levels: number, objects: boolean, inner = '0') =>
  objects
    ? `${'{"a":'.repeat(levels)}${inner}${'}'.repeat(levels)}`
    : `${'['.repeat(levels)}${inner}${']'.repeat(levels)}`;

/** Depths around the bound (a body's 64, its line's 65), and far beyond it. */
const depth = fc.oneof(fc.integer({ min: 58, max: 70 }), fc.constantFrom(1_000, 100_000, 1_000_000));
/** Values around the bound, and beyond it. */
const width = fc.oneof(fc.integer({ min: 99_990, max: 100_010 }), fc.constantFrom(0, 1, 250_000));

const tricky = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.constantFrom('"', '\\', '\u0000', '\u001b[2J', '\ud800', '\udc00x', '😀', '\u2028', '__proto__', 'constructor'),
  fc.integer({ min: 0, max: 1_500_000 }).map((n) => 'é'.repeat(n)),
);
const edgeNumber = fc.constantFrom(
  '-0',
  '1e308',
  '1e400',
  '-1e400',
  '5e-324',
  '9007199254740993',
  '0.1e-999999',
  '1E+2',
);

const message = (content: string) => ({ role: 'user', content });
const envelope = (customId: string, body: unknown) => ({ custom_id: customId, method: 'POST', url: endpoint, body });

/** A line's text (or bytes) built to be refused, or to pass at its bound; `id` makes its custom_id unique. */
const hostileLine = (id: number): fc.Arbitrary<string | Uint8Array> =>
  fc.oneof(
    // Deep: in a field the route keeps whole (tool parameters), as arrays or objects.
    fc
      .tuple(depth, fc.boolean())
      .map(([levels, objects]) =>
        json(envelope(`c${id}`, { model: 'gpt', messages: [message('hi')], tools: [] })).replace(
          '"tools":[]',
          `"tools":[{"type":"function","function":{"name":"f","parameters":{"x":${nestedText(levels, objects)}}}}]`,
        ),
      ),
    // Deep at the top of the line, or of its body.
    fc.tuple(depth, fc.boolean()).map(([levels, objects]) => nestedText(levels, objects)),
    fc
      .tuple(depth, fc.boolean())
      .map(([levels, objects]) =>
        json(envelope(`c${id}`, {})).replace('"body":{}', `"body":${nestedText(levels, objects, '{}')}`),
      ),
    // Wide: values around the bound, in the messages.
    width.map((count) =>
      json(envelope(`c${id}`, { model: 'echo', messages: [message('hi')], metadata: {} })).replace(
        '"metadata":{}',
        `"n":[${Array.from({ length: count }, () => '0').join(',')}]`,
      ),
    ),
    // Huge and tricky strings, and keys that name the prototype.
    tricky.map((content) => json(envelope(`c${id}`, { model: 'echo', messages: [message(content)] }))),
    tricky.map((key) =>
      json(envelope(`c${id}`, { model: 'echo', messages: [message('hi')] })).replace(
        '"model"',
        `${json(key)}:{"__proto__":{"polluted":true}},"constructor":{"prototype":1},"model"`,
      ),
    ),
    // Numbers at the edges where the route wants some.
    edgeNumber.map((number) =>
      json(envelope(`c${id}`, { model: 'echo', messages: [message('hi')], temperature: 0 })).replace(
        '"temperature":0',
        `"temperature":${number},"max_tokens":${number}`,
      ),
    ),
    // Not an object, not JSON, not whole.
    fc.constantFrom('null', '[]', '"line"', '12', 'true', '{', '{"custom_id":', '\ufeff{}', '{}garbage', '{"a":1,}'),
    // Bodies the route refuses.
    fc
      .constantFrom(
        { model: 'echo', messages: [message('hi')], stream: true },
        { model: 'nope', messages: [message('hi')] },
        { model: 'echo' },
        { model: 'echo', messages: 'hi' },
        { model: 'echo', messages: [{ role: 'wizard', content: 'hi' }] },
        { model: 'echo', messages: [message('hi')], tools: [{ type: 'function', function: { name: 'f' } }] },
      )
      .map((body) => json(envelope(`c${id}`, body))),
    // Bytes that are not UTF-8 (a lone continuation byte, an overlong form, a surrogate in UTF-8).
    fc
      .constantFrom([0x80], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xff])
      .map((bad) => Buffer.concat([Buffer.from(`{"custom_id":"c${id}","x":"`), Buffer.from(bad), Buffer.from('"}')])),
  );

/** A line that passes, with content at the edges (the batch then runs). */
const goodLine = (id: number): fc.Arbitrary<string> =>
  fc
    .constantFrom('hi', 'é😀 "quoted" \\ back', '__proto__', '\u2028')
    .map((content) => json(envelope(`c${id}`, { model: 'echo', messages: [message(content)] })));

const bytesOf = (line: string | Uint8Array) => (typeof line === 'string' ? Buffer.from(line) : Buffer.from(line));

/** A file of lines: bytes, each line ended by a newline. */
const fileOf = (lines: readonly (string | Uint8Array)[]) =>
  Buffer.concat(lines.flatMap((line) => [bytesOf(line), Buffer.from('\n')]));

const lineFile = fc
  .integer({ min: 1, max: 4 })
  .chain((count) =>
    fc.tuple(
      ...Array.from({ length: count }, (_, i) => fc.oneof({ weight: 3, arbitrary: hostileLine(i) }, goodLine(i))),
    ),
  );

const checks = lineChecksOf(
  {
    endpoints: batchEndpoints,
    rules: { modelIds: ['echo', 'gpt'], maxPromptChars: 1_000_000, maxPromptBytes: 1024 * 1024 },
    providerOf: (model) => (model === 'gpt' ? 'openai' : 'echo'),
    jsonBounds: bounds,
    maxLineBytes,
  },
  endpoint,
);

describe("a batch's hostile lines", () => {
  it('are each checked without a throw, as a line or a line’s error with its code, whatever their shape', async () => {
    await fc.assert(
      fc.asyncProperty(lineFile, fc.integer({ min: 1, max: 64 * 1024 }), async (lines, chunkBytes) => {
        const file = fileOf(lines);
        const chunks = async function* () {
          for (let at = 0; at < file.length; at += chunkBytes) yield file.subarray(at, at + chunkBytes);
        };
        const seen = new Set<string>();
        let checked = 0;
        for await (const source of jsonLines(chunks(), maxLineBytes)) {
          const line = checkLine(source, checks, seen);
          checked++;
          if ('code' in line) {
            expect(line.line).toBe(source.line);
            expect(typeof line.message).toBe('string');
          } else expect(line.input.model).toMatch(/^(echo|gpt)$/);
        }
        expect(checked).toBeLessThanOrEqual(lines.length);
        // Nothing reached the prototype of every object.
        expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
      }),
      { numRuns: 150 },
    );
  }, 300_000);
});

describe('a batch of hostile lines, run by the batch runner on the memory store', () => {
  let app: TestApp;
  let principal: Principal;
  beforeAll(async () => {
    app = await startTestApp({ clock: systemClock });
    const { accountId, keyId } = await app.account('enterprise');
    principal = { accountId, keyId, plan: 'enterprise' };
  });
  afterAll(() => app.stop());

  it('always ends: its validation fails with one error per bad line, or it runs to completed', async () => {
    let ran = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(lineFile, async (lines) => {
        const bytes = fileOf(lines);
        const uploaded = await app.files.upload(principal, {
          declaredBytes: bytes.byteLength,
          overheadBytes: 0,
          open: async () => ({
            filename: 'hostile.jsonl',
            chunks: (async function* () {
              yield bytes;
            })(),
            details: async () => ({ purpose: 'batch' }),
            discard: () => {},
          }),
        });
        if (!('fileId' in uploaded)) throw new Error(`upload refused: ${uploaded.message}`);
        const created = await app.batches.create(principal, {
          inputFileId: uploaded.fileId,
          endpoint,
          completionWindow: '24h',
        });
        if (!('state' in created)) throw new Error(`create refused: ${created.message}`);
        const { batchId } = created.state.context;
        const deadline = Date.now() + 60_000;
        for (;;) {
          await app.batchRunner.tick();
          await app.batchRunner.idle();
          const view = await app.store.reads.batch(batchId);
          const status = view?.state.status ?? 'none';
          if (isFinalBatch(status)) {
            expect(['failed', 'completed']).toContain(status);
            if (status === 'failed') {
              refused++;
              const errors = JSON.parse(view?.state.context.errors ?? '[]') as { code: string }[];
              expect(errors.length).toBeGreaterThan(0);
              expect(errors.every((error) => error.code !== 'batch_failed')).toBe(true);
            } else ran++;
            return;
          }
          if (Date.now() > deadline) throw new Error(`batch ${batchId} is still ${status}`);
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      }),
      { numRuns: 40 },
    );
    console.log(`hostile batches: ${refused} refused at validation, ${ran} ran to completed`);
    expect(refused).toBeGreaterThan(0);
  }, 600_000);
});
