import type { SubmitInput } from '../../../app/Requests.js';
import { lastUserText } from '../../../app/storedInput.js';
import type { InvalidRequest } from '../../../domain/errors.js';
import type { PassThroughOf } from '../../../modelPassThrough.js';
import { checkOrderOf, refusalOf } from './bodyRefusal.js';
import { generationSettingsOf, type ResponseSettings } from './generationSettings.js';
import { givenFieldsReader } from './givenFields.js';
import { type ItemResolver, resolvedInputOf } from './inputItems.js';
import { keptMetadataOf } from './metadata.js';
import { withPassThrough } from './passThrough.js';
import { responsesConversationOf } from './responsesInput.js';
import { type ResponsesCreateBody, responsesCreateBodySchema, responsesCrossFieldFaults } from './wireFormat.js';

/**
 * A `POST /v1/responses` body understood: what to queue, whether the caller waits for it or streams it, and the
 * settings its Response echoes.
 */
export type ResponsesCreate = {
  readonly input: SubmitInput;
  readonly background: boolean;
  readonly stream: boolean;
  readonly settings: ResponseSettings;
};

const { shape } = responsesCreateBodySchema;
const order = checkOrderOf(shape);

const readFields = givenFieldsReader(shape, 'ignore');

/**
 * The body read with the schema's own fields, over the fields given only (givenFields.ts: fields the schema does not
 * name are left out, accepted and ignored), and the rules across fields; undefined at any fault, which the whole
 * schema then reports as it orders faults.
 */
const readGiven = (body: unknown): ResponsesCreateBody | undefined => {
  const read = readFields(body) as ResponsesCreateBody | undefined;
  return read !== undefined && responsesCrossFieldFaults(read).length === 0 ? read : undefined;
};

const createOf = (body: Record<string, unknown>, data: ResponsesCreateBody): ResponsesCreate => {
  const background = data.background === true;
  const messages = responsesConversationOf(data);
  const { params, settings } = generationSettingsOf(data, background);
  return {
    input: {
      model: data.model,
      // A list's is its last user message's text (instructions come first: never the last message).
      prompt: typeof data.input === 'string' ? data.input : lastUserText(messages ?? []),
      messages,
      params: Object.keys(params).length === 0 ? undefined : params,
      // As given: the schema's copy leaves out a `__proto__` key.
      metadata: keptMetadataOf(body.metadata),
      serviceTier: data.service_tier ?? undefined,
    },
    background,
    stream: data.stream === true,
    settings,
  };
};

/**
 * Reads a `POST /v1/responses` body as OpenAI's SDKs send it, with the body's schema (openai/wireFormat.ts,
 * `responsesCreateBodySchema`): `model`, `input` (a string, or a list of messages and tool-call items), optional
 * `instructions` (a leading system message), `background`, `stream`, the generation settings (generationSettings.ts),
 * `metadata` (kept with the request and shown with it), and the fields the model passes through (`passThroughOf`:
 * passThrough.ts). Each `item_reference` that `resolve` finds (an output item of one of the caller's Responses) is
 * read as that item (inputItems.ts); the schema refuses any other. Fields that do not change the answer are accepted
 * and ignored; fields that would change it unseen are refused with the field named in `param`.
 */
export const parseResponsesCreate = (
  body: unknown,
  resolve?: ItemResolver,
  passThroughOf?: PassThroughOf,
): ResponsesCreate | InvalidRequest =>
  withPassThrough(body, passThroughOf, (rest) => {
    const given = resolvedInputOf(rest, resolve);
    const read = readGiven(given);
    if (read !== undefined) return createOf(given as Record<string, unknown>, read);
    const parsed = responsesCreateBodySchema.safeParse(given);
    return parsed.success
      ? createOf(given as Record<string, unknown>, parsed.data)
      : refusalOf(parsed.error.issues, order);
  });
