import { describe, expect, it } from 'vitest';
import { parseChatCreate } from '../../src/adapters/http/openai/chat/request.js';
import { parseResponsesCreate } from '../../src/adapters/http/openai/input.js';
import { InvalidRequest } from '../../src/domain/errors.js';

/** The fields a body's model passes through, read by the faces' own parsers (passThrough.ts). */
const lists: Record<string, readonly string[]> = { vllm: ['top_k', 'min_p'] };
const passThroughOf = (model: string) => lists[model];
const messages = [{ role: 'user', content: 'hi' }];

describe('The fields a model passes through, read off a body', () => {
  it('keeps a listed field with the parameters and leaves out one given as null, as every null field is', () => {
    const read = parseChatCreate({ model: 'vllm', messages, temperature: 1, top_k: null, min_p: 0.1 }, passThroughOf);
    expect(read).not.toBeInstanceOf(InvalidRequest);
    expect(read instanceof InvalidRequest ? undefined : read.input.params).toEqual({
      temperature: 1,
      extraBody: { min_p: 0.1 },
    });
    const onlyNull = parseChatCreate({ model: 'vllm', messages, top_k: null }, passThroughOf);
    expect(onlyNull instanceof InvalidRequest ? onlyNull : onlyNull.input.params).toBeUndefined();
  });

  it('reports the body’s own fault before a passed-through value’s', () => {
    const read = parseChatCreate(
      { model: 'vllm', messages, temperature: 9, top_k: Number.POSITIVE_INFINITY },
      passThroughOf,
    );
    expect(read).toMatchObject({ message: 'temperature: must be a number from 0 to 2' });
  });

  it('ignores on Responses a field the model does not list, as Responses always did, and keeps the listed one', () => {
    const read = parseResponsesCreate(
      { model: 'vllm', input: 'hi', top_k: 4, typical_p: 0.5 },
      undefined,
      passThroughOf,
    );
    expect(read instanceof InvalidRequest ? read : read.input.params).toEqual({ extraBody: { top_k: 4 } });
    const other = parseResponsesCreate({ model: 'gpt', input: 'hi', top_k: 4 }, undefined, passThroughOf);
    expect(other instanceof InvalidRequest ? other : other.input.params).toBeUndefined();
  });
});
