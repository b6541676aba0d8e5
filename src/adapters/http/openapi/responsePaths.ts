import {
  bearer,
  eventStreamContent,
  headersTooLarge,
  jsonContent,
  rateLimited,
  rateLimitedIfAdmitted,
  ref,
  requestTimedOut,
  responseHeaders,
} from './components.js';
import { idParameter, openAi, openAiErrorAnswer, otherMethods } from './openAiAnswers.js';

/** The `/v1/responses` paths of the OpenAPI document (OpenAI-compatible): create, retrieve and cancel a Response. */

const responseIdParameter = idParameter(
  'The `id` of the Response (`resp_…`); the `request_id` of a `/v1/ai` submit (`req_…`) names the same request.',
);

const responseAnswer = (description: string, names: Parameters<typeof responseHeaders>[0]) => ({
  description,
  headers: responseHeaders(names),
  content: jsonContent('Response'),
});

export const responsePaths = {
  '/v1/responses': {
    description: otherMethods('POST'),
    post: {
      operationId: 'createResponse',
      summary: 'Queue a request, in the background, waiting for it, or streaming it (OpenAI-compatible)',
      description:
        'With `background: true`, answers at once with the Response, `queued` (also when a worker took it ' +
        'already); poll `GET /v1/responses/{id}`. Without it, waits until the request is final and answers the ' +
        'Response `completed`, `failed` or `cancelled` (never `queued` or `in_progress`); if the caller goes away ' +
        'first, the request is cancelled. With `stream: true`, answers with ' +
        'the Response’s events (`ResponseStreamEvent`) as they happen, and a keep-alive comment after 10 s without ' +
        'one; a stream that is not `background` cancels its request when the caller goes away. Spends a submit.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [ref('parameters', 'Idempotency-Key'), ref('parameters', 'Cancel-After')],
      requestBody: { required: true, content: jsonContent('ResponsesCreate') },
      responses: {
        '200': {
          ...responseAnswer('The Response: durably queued (background), or final after waiting; or its events.', {
            'Idempotent-Replayed': 'optional',
            ...rateLimited,
          }),
          content: {
            ...jsonContent('Response'),
            ...eventStreamContent('ResponseStreamEvent', 'With `stream: true`: the Response’s events.'),
          },
        },
        '400': openAiErrorAnswer(
          'Malformed JSON; JSON nested deeper than `maxJsonDepth` (64) or holding more than `maxJsonValues` ' +
            '(100,000) values; a body that is not an object; `model` or `input` missing or of the wrong type; an ' +
            'empty or too long input; a part or item airs cannot send a model; a setting out of ' +
            'range; a tool that is not a function; tools or a JSON schema on the `echo` provider; ' +
            '`previous_response_id`, `conversation`, `prompt`, `text.verbosity`, `max_tool_calls` or log ' +
            'probabilities (named in `param` where the parser knows the field); a `Content-Type` that is not JSON; ' +
            'an invalid `Idempotency-Key` (with the RateLimit headers). Or a client that closed its connection ' +
            'before its body arrived (without them).',
          rateLimitedIfAdmitted,
        ),
        '401': openAi.unauthorized(),
        '403': openAi.forbidden(),
        '404': openAiErrorAnswer(
          'A model that does not exist for the account (`model_not_found`: not configured, or not among its ' +
            '`allowedModels`); or a waiting create whose request expired (`requestTtlSeconds` passed) before it ' +
            'was final.',
          rateLimited,
        ),
        '413': openAiErrorAnswer(
          'The body is larger than `maxBodyBytes`; refused without reading it all.',
          rateLimited,
        ),
        '422': openAiErrorAnswer(
          'The `Idempotency-Key` was used by this account with another body (`idempotency_key_reused`).',
          rateLimited,
        ),
        '429': openAi.rateLimited('submits', true),
        '408': requestTimedOut(),
        '431': headersTooLarge(),
        '500': openAi.fault(),
        '503': openAi.stopping(true),
      },
    },
  },
  '/v1/responses/{id}': {
    description: `${otherMethods('GET')} \`DELETE\` is not supported: a request expires 24 hours after it was created.`,
    get: {
      operationId: 'retrieveResponse',
      summary: 'Retrieve a Response, or stream its events (OpenAI-compatible)',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [
        responseIdParameter,
        {
          name: 'stream',
          in: 'query',
          required: false,
          description:
            '`true`: the Response’s events (`ResponseStreamEvent`) from the start, until it is final. Text that an ' +
            'attempt writes from after the stream began comes as it is written; otherwise the text comes whole when ' +
            'the request completes.',
          schema: { type: 'string', enum: ['true', 'false'] },
        },
        {
          name: 'starting_after',
          in: 'query',
          required: false,
          description:
            'With `stream=true`: leave out the events whose `sequence_number` is this or lower. The numbers are ' +
            'this stream’s own; a stream of a finished request is the same every time, so a client resumes exactly ' +
            'from the last event it had.',
          schema: { type: 'string', pattern: '^\\d{1,9}$' },
        },
      ],
      responses: {
        '200': {
          ...responseAnswer(
            'The Response, whatever its status (a failed one carries `error`; a cancelled one stays cancelled); or ' +
              'its events. Spends a poll.',
            rateLimited,
          ),
          content: {
            ...jsonContent('Response'),
            ...eventStreamContent('ResponseStreamEvent', 'With `stream=true`: the Response’s events.'),
          },
        },
        '400': openAi.unparsablePath(
          '`stream` not `true` or `false`, or `starting_after` not a whole number or without `stream=true`.',
        ),
        '401': openAi.unauthorized(),
        '403': openAi.forbidden(),
        '404': openAiErrorAnswer('Unknown id, one of another account, or one older than 24 hours.', rateLimited),
        '429': openAi.rateLimited('polls', true),
        '408': requestTimedOut(),
        '431': headersTooLarge(),
        '500': openAi.fault(),
        '503': openAi.stopping(true),
      },
    },
  },
  '/v1/responses/{id}/cancel': {
    description: otherMethods('POST'),
    post: {
      operationId: 'cancelResponse',
      summary: 'Cancel a queued or in-progress request (OpenAI-compatible)',
      description:
        'A model call in flight is aborted and a late result dropped: a cancelled request is never completed. ' +
        'Cancelling a cancelled request answers it again. No body is read. Spends a poll.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [responseIdParameter],
      responses: {
        '200': responseAnswer('The Response, `cancelled`.', rateLimited),
        '400': openAi.unparsablePath('The request is completed or failed: it cannot be cancelled.'),
        '401': openAi.unauthorized(),
        '403': openAi.forbidden(),
        '404': openAiErrorAnswer('Unknown id, one of another account, or one older than 24 hours.', rateLimited),
        '429': openAi.rateLimited('polls'),
        '408': requestTimedOut(),
        '431': headersTooLarge(),
        '500': openAi.fault(),
        '503': openAi.stopping(),
      },
    },
  },
} as const;
