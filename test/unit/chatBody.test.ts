import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseChatCreate } from '../../src/adapters/http/openai/chat/request.js';
import { chatCompletionCreateBodySchema } from '../../src/adapters/http/openai/chat/wireFormat.js';
import { openApiDocument } from '../../src/adapters/http/openapi.js';
import { InvalidRequest } from '../../src/domain/errors.js';

/**
 * The `POST /v1/chat/completions` body has one description, adapters/http/openai/chat/wireFormat.ts's schema: the route parses with it
 * (parseChatCreate, which the Batch API will run on each line of a file too) and the OpenAPI document is generated
 * from it. These tests hold the two views together, and pin the refusals that take more than one rule to decide.
 */

type JsonSchema = { properties: Record<string, unknown> };
const documented = () =>
  (openApiDocument() as { components: { schemas: { ChatCompletionCreate: JsonSchema } } }).components.schemas
    .ChatCompletionCreate;

const hello = [{ role: 'user', content: 'Hello there' }];
const refusal = (body: unknown) => {
  const parsed = parseChatCreate(body);
  return parsed instanceof InvalidRequest ? { message: parsed.message, details: parsed.details } : undefined;
};
const refused = (fields: Record<string, unknown>) => refusal({ model: 'm', messages: hello, ...fields });

const plain = fc.string({ minLength: 1, maxLength: 8 }).filter((s) => s.trim() !== '' && !/\p{Cs}/u.test(s));
const call = { id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } };
const validMessage = fc.oneof(
  fc.record({ role: fc.constantFrom('system', 'developer', 'user'), content: plain }),
  fc.record({ role: fc.constant('user'), content: fc.array(fc.record({ type: fc.constant('text'), text: plain })) }),
  fc.record({
    role: fc.constant('assistant'),
    content: fc.oneof(plain, fc.constant(null)),
    tool_calls: fc.constant([call]),
  }),
  fc.record({
    role: fc.constant('tool'),
    tool_call_id: fc.constant('c'),
    content: plain,
    name: fc.constantFrom('f', null),
  }),
);
/** Bodies within the rules: every field, now set and now not. */
const validBody = fc.record(
  {
    model: fc.constant('m'),
    messages: fc.array(validMessage, { minLength: 1, maxLength: 3 }).map((m) => [...m, { role: 'user', content: 'q' }]),
    temperature: fc.double({ min: 0, max: 2, noNaN: true }),
    max_tokens: fc.integer({ min: 1, max: 9 }),
    seed: fc.integer(),
    stop: fc.oneof(plain, fc.array(plain, { maxLength: 16 })),
    user: plain,
    n: fc.constantFrom(1, null),
    logprobs: fc.constantFrom(false, null),
    modalities: fc.constant(['text']),
    logit_bias: fc.constant({}),
    stream: fc.boolean(),
    stream_options: fc.record({ include_usage: fc.boolean() }, { requiredKeys: [] }),
    response_format: fc.record({ type: fc.constantFrom('text', 'json_object') }),
    tools: fc.constant([
      { type: 'function', function: { name: 'f', parameters: { type: 'object' } } },
      { type: 'function', function: { name: 'g', description: 'd', strict: true } },
    ]),
    tool_choice: fc.constantFrom('none', 'auto', 'required', { type: 'function', function: { name: 'g' } }),
    metadata: fc.dictionary(fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 }), { maxKeys: 3 }),
    store: fc.boolean(),
    audio: fc.constant(null),
  },
  { requiredKeys: ['model', 'messages'] },
);
const fault = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(undefined, null, '', ' ', '\ud800', 1.5, -1, 3, [], {}, ['text', 'audio'], 'a b', 'x'.repeat(300)),
);
/** Bodies within the rules, and the same with one field, or one message's field, set to something else. */
const bodyArb = fc.oneof(
  validBody,
  fc
    .tuple(validBody, fc.constantFrom(...Object.keys(chatCompletionCreateBodySchema.shape), 'top_k'), fault)
    .map(([body, field, value]) => ({ ...body, [field]: value })),
  fc
    .tuple(validBody, fc.constantFrom('role', 'content', 'name', 'tool_calls', 'tool_call_id', 'refusal'), fault)
    .map(([body, field, value]) => ({
      ...body,
      messages: [{ ...body.messages[0], [field]: value }, ...body.messages],
    })),
);

describe('The chat completions body, described once', () => {
  it('documents exactly the fields the parser reads: each is accepted unset, any other is refused by name', () => {
    const fields = Object.keys(documented().properties);
    expect(fields).toEqual(Object.keys(chatCompletionCreateBodySchema.shape));
    for (const field of fields.filter((field) => field !== 'model' && field !== 'messages'))
      expect(refused({ [field]: null }), field).toBeUndefined();
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 20 }).filter((field) => !fields.includes(field)),
        (field) => {
          expect(refused({ [field]: 1 })).toEqual({
            message: `${field}: unknown parameter ${JSON.stringify(field)}; airs refuses what it would not honour`,
            details: { param: field },
          });
        },
      ),
    );
  });

  it('accepts only bodies the document allows, exactly those the schema accepts', () => {
    const validate = new Ajv2020().compile(documented());
    fc.assert(
      fc.property(bodyArb, (body) => {
        const accepted = refusal(body) === undefined;
        // Rules beyond the shape (white space only, duplicate tools, a tool_choice naming no tool...) are the
        // parser's alone: the document may allow a body the parser refuses, never the other way round.
        if (accepted) expect(validate(body), JSON.stringify(validate.errors)).toBe(true);
        // The parser reads the fields a body gives, and falls back on the whole schema: the two agree.
        expect(chatCompletionCreateBodySchema.safeParse(body).success, JSON.stringify(body)).toBe(accepted);
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses a body with several faults for the first in the order airs checks them', () => {
    const tools = [
      { type: 'function', function: { name: 'f' } },
      { type: 'function', function: { name: 'g' } },
    ];
    const cases: [Record<string, unknown>, string, string][] = [
      // An unknown field is refused after the refused fields, before stream and the parameters.
      [{ top_k: 1, stream: 'yes', audio: { voice: 'x' } }, 'audio', 'audio output is not supported; airs answers text'],
      [{ top_k: 1, stream: 'yes' }, 'top_k', 'unknown parameter "top_k"; airs refuses what it would not honour'],
      // A stream option's unknown key before its fields.
      [{ stream_options: { include_usage: 'x', chunk: 1 } }, 'stream_options.chunk', 'unknown stream option'],
      // A list too long before its items.
      [
        { tools: [{ type: 'web_search' }, ...Array.from({ length: 128 }, (_, i) => tools[i % 2])] },
        'tools',
        'must hold at most 128 tools',
      ],
      // A duplicate name before the rest of its tool.
      [
        { tools: [...tools, { type: 'function', function: { name: 'f', description: 5 } }] },
        'tools[2].function.name',
        'another tool is already named f',
      ],
      // Stop sequences counted once they are found to be strings.
      [{ stop: Array.from({ length: 17 }, () => 1) }, 'stop', 'must be a string or a list of strings'],
      [{ stop: Array.from({ length: 17 }, () => 's') }, 'stop', 'must hold at most 16 sequences'],
      // The fault inside a content part, a function choice's name, a message's name: where it is, even when a
      // later field's fault ends zod's reading (max_tokens 1.5).
      [
        { messages: [{ role: 'user', content: [{ type: 'image_url' }] }], max_tokens: 1.5 },
        'messages[0].content[0].type',
        'content part type "image_url" is not supported; airs takes text parts only (no images, audio or files)',
      ],
      [
        { tools, tool_choice: { type: 'function', function: { name: 5 } }, max_tokens: 1.5 },
        'max_tokens',
        'must be an integer from 1 to 2147483647',
      ],
      [
        { tools, tool_choice: { type: 'function', function: { name: 5 } } },
        'tool_choice.function.name',
        'must name one of the tools',
      ],
      [
        { tool_choice: { type: 'x', function: { name: 5 } } },
        'tool_choice',
        'must be none, auto, required or {"type": "function", "function": {"name"}}',
      ],
      [
        { messages: [{ role: 'robot', name: 'bob', content: 'x' }], max_tokens: 1.5 },
        'messages[0].name',
        'participant names are not supported; put the name in the content',
      ],
      // Identifiers are counted in UTF-16 units, as they always were (zod's .max counts code points).
      [{ user: '🎉'.repeat(200) }, 'user', 'must be at most 256 characters long'],
    ];
    for (const [fields, param, message] of cases)
      expect(refused(fields), JSON.stringify(fields).slice(0, 200)).toEqual({
        message: `${param}: ${message}`,
        details: { param },
      });
    expect(refusal([])).toEqual({ message: 'the body must be a JSON object with "model" and "messages"' });
  });

  it('reads a body as airs keeps it: text parts joined, unset fields left out, the tools’ schemas as given', () => {
    const parameters = { type: 'object', properties: { city: { type: 'string' } } };
    const parsed = parseChatCreate({
      model: 'm',
      messages: [
        {
          role: 'system',
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b', cache: 1 },
          ],
          name: '',
        },
        { role: 'user', content: 'hi', name: null },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c', content: 'sunny', name: 'f' },
      ],
      tools: [{ type: 'function', function: { name: 'f', description: null, parameters, strict: true } }],
      tool_choice: { type: 'function', function: { name: 'f', extra: 1 } },
      temperature: null,
      stream: true,
      stream_options: { include_usage: true },
      metadata: { a: 'b' },
    });
    expect(parsed).not.toBeInstanceOf(InvalidRequest);
    const create = parsed as Exclude<typeof parsed, InvalidRequest>;
    expect(JSON.stringify(create.input.messages)).toBe(
      JSON.stringify([
        { role: 'system', content: 'a\nb' },
        { role: 'user', content: 'hi' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c', content: 'sunny' },
      ]),
    );
    expect(create.input.params).toEqual({
      tools: [{ type: 'function', function: { name: 'f', parameters, strict: true } }],
      tool_choice: { type: 'function', function: { name: 'f' } },
    });
    expect(create.input.params?.tools?.[0]?.function.parameters).toBe(parameters);
    expect(create).toMatchObject({ stream: true, includeUsage: true, input: { prompt: 'hi', metadata: '{"a":"b"}' } });
  });
});
