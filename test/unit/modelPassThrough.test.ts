import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chatCompletionCreateBodySchema } from '../../src/adapters/http/openai/chat/wireFormat.js';
import { responsesCreateBodySchema } from '../../src/adapters/http/openai/wireFormat.js';
import { loadConfig } from '../../src/config.js';
import { reservedBodyFields } from '../../src/modelPassThrough.js';

const dir = mkdtempSync(join(tmpdir(), 'airs-pass-through-'));
const modelWith = (passThrough: unknown) => ({
  id: 'vllm',
  provider: 'openai',
  baseUrl: 'http://127.0.0.1:8000/v1',
  upstreamModel: 'meta-llama/Llama-3.1-8B-Instruct',
  passThrough,
});
const load = (passThrough: unknown) => {
  const path = join(dir, `c${Math.random()}.json`);
  writeFileSync(path, JSON.stringify({ models: [modelWith(passThrough)] }));
  return () => loadConfig({ AIRS_CONFIG: path }, dir);
};
const at = '\\(model "vllm"\\)';

describe('A model’s passThrough list at config load', () => {
  it('keeps the fields an openai model lists, in order', () => {
    const names = ['top_k', 'min_p', 'repetition_penalty', 'guided_json'];
    expect(load(names)().models[0]).toMatchObject({ id: 'vllm', passThrough: names });
  });

  it('refuses a name of a field airs sets or checks itself, naming the entry and the field', () => {
    for (const [index, name] of [
      [1, 'messages'],
      [1, 'model'],
      [1, 'stream'],
      [1, 'temperature'],
      [1, 'input'],
      [1, '__proto__'],
    ] as const)
      expect(load(['top_k', name])).toThrow(
        new RegExp(
          `models\\[0\\]\\.passThrough\\[${index}\\] ${at}: "${name}" is a field airs sets or checks itself; it cannot be passed through`,
        ),
      );
  });

  it('reserves every field of the chat completions and Responses bodies', () => {
    const fields = [
      ...Object.keys(chatCompletionCreateBodySchema.shape),
      ...Object.keys(responsesCreateBodySchema.shape),
    ];
    expect(fields.filter((field) => !reservedBodyFields.has(field))).toEqual([]);
  });

  it('refuses a name that is not a field name, a name listed twice, and more than 64 names', () => {
    const nameRule = 'must be a field name: a letter or _, then letters, digits or _, at most 64 characters';
    expect(load(['top-k'])).toThrow(`models[0].passThrough[0] (model "vllm"): ${nameRule}`);
    expect(load(['x'.repeat(65)])).toThrow(`models[0].passThrough[0] (model "vllm"): ${nameRule}`);
    expect(load([''])).toThrow(nameRule);
    expect(load(['top_k', 'top_k'])).toThrow('models[0].passThrough (model "vllm"): must not list a field twice');
    const many = Array.from({ length: 65 }, (_, i) => `field_${i}`);
    expect(load(many)).toThrow('models[0].passThrough (model "vllm"): must list at most 64 fields');
    expect(load(many.slice(0, 64))().models[0]).toMatchObject({ passThrough: many.slice(0, 64) });
  });

  it('is refused on an echo model, which sends nothing upstream', () => {
    const path = join(dir, 'echo.json');
    writeFileSync(path, JSON.stringify({ models: [{ id: 'e', provider: 'echo', passThrough: ['top_k'] }] }));
    expect(() => loadConfig({ AIRS_CONFIG: path }, dir)).toThrow(/models\[0\]\.passThrough \(model "e"\): unknown key/);
  });
});
