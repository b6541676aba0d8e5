import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseResponsesCreate } from '../../src/adapters/http/openai/input.js';
import { responsesCreateBodySchema } from '../../src/adapters/http/openai/wireFormat.js';
import { openApiDocument } from '../../src/adapters/http/openapi.js';
import { InvalidRequest } from '../../src/domain/errors.js';

/**
 * The `POST /v1/responses` body has one description, adapters/http/openai/wireFormat.ts's schema: the route parses with it
 * (parseResponsesCreate, which the Batch API runs on each line of a file too) and the OpenAPI document is generated
 * from it. These tests hold the two views together, and pin the refusals that take more than one rule to decide.
 */

type JsonSchema = { properties: Record<string, unknown>; required: string[] };
const documented = () =>
  (openApiDocument() as { components: { schemas: { ResponsesCreate: JsonSchema } } }).components.schemas
    .ResponsesCreate;

const refusal = (body: unknown) => {
  const parsed = parseResponsesCreate(body);
  return parsed instanceof InvalidRequest ? { message: parsed.message, details: parsed.details } : undefined;
};
const refused = (fields: Record<string, unknown>) => refusal({ model: 'm', input: 'Hello', ...fields });
const fault = (param: string, message: string) => ({ message: `${param}: ${message}`, details: { param } });

const plain = fc.string({ minLength: 1, maxLength: 8 }).filter((s) => s.trim() !== '' && !/\p{Cs}/u.test(s));
const item = fc.oneof(
  fc.record({ role: fc.constantFrom('system', 'developer', 'user', 'assistant'), content: plain }),
  fc.record({
    type: fc.constant('message'),
    role: fc.constant('user'),
    content: fc.array(fc.record({ type: fc.constantFrom('input_text', 'output_text'), text: plain })),
  }),
  fc.constant({ type: 'function_call', call_id: 'c', name: 'f', arguments: '{}' }),
);
/** Bodies within the rules: every field, now set and now not. */
const validBody = fc.record(
  {
    model: fc.constant('m'),
    input: fc.oneof(
      plain,
      fc.array(item, { minLength: 1, maxLength: 3 }).map((i) => [...i, { role: 'user', content: 'q' }]),
    ),
    instructions: fc.constantFrom('be brief', '', null),
    background: fc.boolean(),
    stream: fc.boolean(),
    temperature: fc.double({ min: 0, max: 2, noNaN: true }),
    top_p: fc.double({ min: 0, max: 1, noNaN: true }),
    max_output_tokens: fc.integer({ min: 1, max: 9 }),
    user: plain,
    parallel_tool_calls: fc.boolean(),
    tools: fc.constant([
      { type: 'function', name: 'f', parameters: { type: 'object' } },
      { type: 'function', name: 'g', description: 'd', strict: true },
    ]),
    tool_choice: fc.constantFrom('none', 'auto', 'required', { type: 'function', name: 'g' }),
    text: fc.record({ format: fc.record({ type: fc.constantFrom('text', 'json_object') }) }),
    top_logprobs: fc.constantFrom(0, null),
    include: fc.constantFrom(['reasoning.encrypted_content'], null),
    metadata: fc.dictionary(fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 }), { maxKeys: 3 }),
    store: fc.boolean(),
    max_tool_calls: fc.constant(null),
  },
  { requiredKeys: ['model', 'input'] },
);
const faultValue = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(undefined, null, '', ' ', '\ud800', 1.5, -1, 3, [], {}, 'a b', 'x'.repeat(300), ['x']),
);
/** Bodies within the rules, and the same with one field, or one item's field, set to something else. */
const bodyArb = fc.oneof(
  validBody,
  fc
    .tuple(validBody, fc.constantFrom(...Object.keys(responsesCreateBodySchema.shape), 'top_k'), faultValue)
    .map(([body, field, value]) => ({ ...body, [field]: value })),
  fc
    .tuple(validBody, fc.constantFrom('type', 'role', 'content', 'call_id', 'name', 'arguments', 'output'), faultValue)
    .map(([body, field, value]) => ({
      ...body,
      input: [
        { role: 'user', content: 'x', [field]: value },
        { role: 'user', content: 'q' },
      ],
    })),
);

describe('The Responses create body, described once', () => {
  it('documents exactly the fields the parser reads: each is accepted unset, any other is accepted and ignored', () => {
    const fields = Object.keys(documented().properties);
    expect(fields).toEqual(Object.keys(responsesCreateBodySchema.shape));
    expect(documented().required).toEqual(['model', 'input']);
    for (const field of fields.filter((field) => field !== 'model' && field !== 'input'))
      expect(refused({ [field]: null }), field).toBeUndefined();
    expect(refused({ store: true, reasoning: { effort: 'low' }, truncation: 'auto', top_k: 3 })).toBeUndefined();
  });

  it('accepts only bodies the document allows, exactly those the schema accepts', () => {
    const validate = new Ajv2020().compile(documented());
    fc.assert(
      fc.property(bodyArb, (body) => {
        const accepted = refusal(body) === undefined;
        // Rules beyond the shape (white space only, duplicate tools, a tool_choice naming no tool...) are the
        // parser's alone: the document may allow a body the parser refuses, never the other way round.
        if (accepted) expect(validate(body), JSON.stringify(validate.errors)).toBe(true);
        expect(responsesCreateBodySchema.safeParse(body).success, JSON.stringify(body)).toBe(accepted);
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses a body for its first fault in the order airs has always checked them', () => {
    // A fault before `input` comes first; the rule across `input` and `instructions` at `input`, before the rest.
    expect(refused({ input: ' ', instructions: 5, temperature: 9 })).toEqual(fault('instructions', 'must be a string'));
    expect(refused({ input: ' ', temperature: 9 })).toEqual(fault('input', 'must not be empty'));
    expect(refused({ input: ' ', instructions: 'be brief' })).toBeUndefined();
    expect(refused({ input: 'hi', instructions: '\ud800' })).toEqual(
      fault('input', 'must be valid Unicode text; it contains an unpaired surrogate'),
    );
    expect(refused({ model: null, input: null })).toEqual(fault('model', 'must be a string'));
    expect(refusal({ model: 'm' })).toEqual(fault('input', 'is required'));
    // Inside the list, the first item at fault, as each item's fields are read in order.
    expect(
      refused({
        input: [
          { type: 'function_call_output', call_id: 'c', output: 5 },
          { type: 'function_call', call_id: 'c', name: 'f', arguments: '{}' },
          { role: 'tool', content: 'x' },
        ],
      }),
    ).toEqual(fault('input[0].call_id', 'no function_call with call_id "c" comes before this output'));
    expect(refused({ input: [{ role: 'user', content: [{ type: 'input_image' }, 5] }] })).toEqual(
      fault('input[0].content[0].type', 'part type "input_image" is not supported; airs takes text (input_text) only'),
    );
    expect(refused({ input: [{ type: 'item_reference', id: 'msg_x' }] })?.details).toEqual({ param: 'input[0].id' });
    // Call ids are bounded in UTF-16 units: 128 astral characters are 256 of them.
    const call = (call_id: string) => ({ type: 'function_call', call_id, name: 'f', arguments: '{}' });
    expect(refused({ input: [call('😀'.repeat(128))] })).toBeUndefined();
    expect(refused({ input: [call('x'.repeat(257))] })).toEqual(
      fault('input[0].call_id', 'must be a non-empty string of at most 256 characters'),
    );
    // Rules across fields: the tools are read first.
    expect(refused({ tool_choice: 'required' })).toEqual(fault('tool_choice', '"required" needs tools'));
    expect(refused({ tools: [{ type: 'function', name: 'f' }], tool_choice: { type: 'function', name: 'g' } })).toEqual(
      fault('tool_choice.name', 'must name one of the functions in tools'),
    );
    expect(
      refused({
        tools: [
          { type: 'function', name: 'f' },
          { type: 'function', name: 'f' },
        ],
        tool_choice: 'sometimes',
      }),
    ).toEqual(fault('tools[1].name', 'the function name "f" is given twice'));
    expect(refused({ include: ['message.output_text.logprobs'], temperature: 9 })).toEqual(
      fault('include', 'log probabilities (message.output_text.logprobs) are not supported'),
    );
    expect(refused({ include: 'anything' })).toBeUndefined();
  });

  it('reads an item_reference its resolver finds as the item it names', () => {
    const parsed = parseResponsesCreate(
      {
        model: 'm',
        input: [
          { role: 'user', content: 'hi' },
          { type: 'item_reference', id: 'msg_a' },
        ],
      },
      (id) => (id === 'msg_a' ? { type: 'message', text: 'earlier' } : undefined),
    );
    expect(parsed instanceof InvalidRequest ? parsed.message : parsed.input.messages).toEqual([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'earlier' },
    ]);
  });
});
