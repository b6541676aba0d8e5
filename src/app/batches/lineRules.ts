import { InvalidRequest } from '../../domain/errors.js';
import { controlCharacters } from '../../domain/identifiers.js';
import { type JsonBounds, lineBoundExceeded } from '../../domain/jsonBounds.js';
import type { PassThroughOf } from '../../modelPassThrough.js';
import type { SubmitInput } from '../Requests.js';
import { storedInputOf } from '../storedInput.js';
import { beyondModel, checkModelAndSize, rulesForAccount, type SubmissionRules } from '../submission.js';
import type { BatchEndpointsShape } from './BatchEndpoints.js';
import type { JsonLine } from './jsonLines.js';

/** One entry of a failed batch's `errors.data` (contract 16). */
export type LineError = {
  readonly code:
    | 'invalid_json'
    | 'invalid_custom_id'
    | 'duplicate_custom_id'
    | 'invalid_method'
    | 'invalid_url'
    | 'invalid_request'
    | 'too_many_lines'
    | 'empty_file';
  readonly line: number | null;
  readonly message: string;
  readonly param: string | null;
};

/**
 * What a line is checked against: its batch's endpoint, the body check of that endpoint's route (the same code the
 * route runs, with the route's message), and the bounds the route gives a body (contract 15: bytes, depth, values).
 */
export type LineChecks = {
  readonly endpoint: string;
  readonly checkBody: (body: unknown) => SubmitInput | InvalidRequest;
  readonly bounds: JsonBounds;
  /** A request body's bytes, at most (`maxBodyBytes`): `jsonLines` reads no longer line. */
  readonly maxLineBytes: number;
};

/** A line understood: its `custom_id` and the request its body makes. */
export type BatchLine = { readonly line: number; readonly customId: string; readonly input: SubmitInput };

/** A `custom_id` is the caller's name for a line, shown back in the output: short text, no control characters. */
export const maxCustomIdChars = 512;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const error = (code: LineError['code'], line: number, message: string, param: string | null = null): LineError => ({
  code,
  line,
  message,
  param,
});

/**
 * Checks one line of a batch's input file as contract 16 says: `{custom_id, method: "POST", url: <the batch's
 * endpoint>, body}`, the body checked by the route's own code. A line beyond the bounds a body gets is refused from
 * its bytes, before `JSON.parse` builds anything (a 4 MB line nested 2,000,000 levels deep would parse into about
 * 116 MB, and later overflow the stack of whatever walks it). `seen` holds the custom ids of the lines before it
 * (uniqueness within the file).
 */
export const checkLine = (source: JsonLine, checks: LineChecks, seen: Set<string>): BatchLine | LineError => {
  const { line } = source;
  const { endpoint } = checks;
  if ('tooLong' in source)
    return error(
      'invalid_request',
      line,
      `line ${line} is longer than ${checks.maxLineBytes} bytes, the limit of a request body (maxBodyBytes)`,
      'body',
    );
  if ('notUtf8' in source) return error('invalid_json', line, `line ${line} is not valid UTF-8`);
  const beyond = lineBoundExceeded(source.bytes, checks.bounds);
  if (beyond !== undefined) return error('invalid_request', line, beyond.message, 'body');
  let parsed: unknown;
  try {
    parsed = JSON.parse(source.text);
  } catch (cause) {
    return error('invalid_json', line, `line ${line} is not valid JSON: ${(cause as Error).message}`);
  }
  if (!isObject(parsed)) return error('invalid_json', line, `line ${line} is not a JSON object`);
  const customId = parsed.custom_id;
  if (typeof customId !== 'string' || customId.length === 0)
    return error('invalid_custom_id', line, 'custom_id must be a non-empty string', 'custom_id');
  if (customId.length > maxCustomIdChars || controlCharacters.test(customId))
    return error(
      'invalid_custom_id',
      line,
      `custom_id must be at most ${maxCustomIdChars} characters without control characters`,
      'custom_id',
    );
  if (seen.has(customId))
    return error(
      'duplicate_custom_id',
      line,
      `custom_id ${JSON.stringify(customId)} is used by an earlier line`,
      'custom_id',
    );
  seen.add(customId);
  if (parsed.method !== 'POST') return error('invalid_method', line, 'method must be "POST"', 'method');
  if (parsed.url !== endpoint)
    return error('invalid_url', line, `url must be the batch's endpoint, ${endpoint}`, 'url');
  if (!isObject(parsed.body)) return error('invalid_request', line, 'body must be a JSON object', 'body');
  if (parsed.body.stream === true)
    return error('invalid_request', line, 'stream is not supported in a batch', 'body.stream');
  const input = checks.checkBody(parsed.body);
  if (input instanceof InvalidRequest) {
    const param = input.details?.param;
    return error('invalid_request', line, input.message, typeof param === 'string' ? `body.${param}` : 'body');
  }
  return { line, customId, input };
};

/** What a line's body is checked against: the routes' own parsers, the submit's rules, each model's provider and the
 * fields it passes through, and the bounds of a request's body. */
export type LineCheckRules = {
  readonly endpoints: BatchEndpointsShape;
  readonly rules: SubmissionRules;
  readonly providerOf: (model: string) => string | undefined;
  /** The fields each model passes through (none: a line's unknown fields are refused or ignored as its route does). */
  readonly passThroughOf?: PassThroughOf | undefined;
  readonly jsonBounds: JsonBounds;
  readonly maxLineBytes: number;
};

/**
 * How a line of a batch for `endpoint` is checked (`checkLine`): its body by the route's own code, then by the rules
 * every submit meets (a known model, the sizes) and what its model can do; the bounds of a request's body. Validation,
 * queueing and the start of each line's attempt (lineInput.ts) all check with this, so a line runs only as validation
 * took it.
 */
export const lineChecksOf = (
  deps: LineCheckRules,
  endpoint: string,
  allowedModels?: readonly string[] | undefined,
): LineChecks => {
  const rules = rulesForAccount(deps.rules, allowedModels);
  // The size of a conversation is named as each route names it.
  const textParam = endpoint === '/v1/responses' ? 'input' : 'messages';
  const checkBody = (body: unknown) => {
    const input = deps.endpoints.check(endpoint, body, deps.passThroughOf);
    if (!('model' in input)) return input;
    const refused = checkModelAndSize(input, storedInputOf(input).text, rules);
    if (refused !== undefined) {
      // The submit's checks name no field (`/v1/ai` has two): the line's error does.
      const param = refused.details?.known_models !== undefined ? 'model' : textParam;
      return new InvalidRequest({ message: refused.message, details: { ...refused.details, param } });
    }
    return beyondModel(input, deps.providerOf(input.model)) ?? input;
  };
  return { endpoint, checkBody, bounds: deps.jsonBounds, maxLineBytes: deps.maxLineBytes };
};
