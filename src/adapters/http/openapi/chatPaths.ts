import {
  bearer,
  headersTooLarge,
  jsonContent,
  rateLimited,
  rateLimitedIfAdmitted,
  ref,
  requestTimedOut,
  responseHeaders,
} from './components.js';
import { openAi, openAiErrorAnswer, otherMethods } from './openAiAnswers.js';

/** The `/v1/chat/completions` path of the OpenAPI document (OpenAI-compatible). */

export const chatPaths = {
  '/v1/chat/completions': {
    description: otherMethods('POST'),
    post: {
      operationId: 'createChatCompletion',
      summary: 'Queue a chat completion and wait for it, or stream it (OpenAI-compatible)',
      description:
        'A request like any other (the same accounts, limits, queue, log and expiry): its id is `chatcmpl-X` for ' +
        'the request `req_X`. Without `stream`, the call waits until the request is final and answers the ' +
        '`chat.completion` (a failed or cancelled request answers an error); if the caller goes away first, the ' +
        'request is cancelled. With `stream: true`, answers `chat.completion.chunk` events, then `data: [DONE]`, ' +
        'and cancels the request if the caller goes away. Spends a submit.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [ref('parameters', 'Idempotency-Key'), ref('parameters', 'Cancel-After')],
      requestBody: { required: true, content: jsonContent('ChatCompletionCreate') },
      responses: {
        '200': {
          description: 'The completion, or its chunks.',
          headers: responseHeaders({ 'X-Request-Id': 'optional', 'Idempotent-Replayed': 'optional', ...rateLimited }),
          content: {
            ...jsonContent('ChatCompletion'),
            'text/event-stream': {
              schema: {
                type: 'string',
                description:
                  'With `stream: true`: the chunks, then `data: [DONE]`; or, when the request fails, is cancelled or ' +
                  'expires, or an attempt breaks after part of its text was sent, a last `data: {"error": ...}` ' +
                  'event in OpenAI’s error shape and no `[DONE]`.',
              },
              'x-event-data': { anyOf: [ref('schemas', 'ChatCompletionChunk'), ref('schemas', 'OpenAIError')] },
            },
          },
        },
        '400': openAiErrorAnswer(
          'Malformed JSON or a body over the JSON bounds; `model` or `messages` missing or of the wrong type; an ' +
            'empty or too long conversation; a part airs cannot send a model; a parameter out ' +
            'of range; `n` other than 1, `logprobs`, `top_logprobs`, a tool that is not a function; tools or a ' +
            'JSON schema on the `echo` provider (named in `param`); a `Content-Type` that is not JSON; an invalid ' +
            '`Idempotency-Key` (with the RateLimit headers). Or a client that closed its connection before its ' +
            'body arrived (without them).',
          rateLimitedIfAdmitted,
        ),
        '401': openAi.unauthorized(),
        '403': openAi.forbidden(),
        '404': openAiErrorAnswer(
          'A model that does not exist for the account (`model_not_found`: not configured, or not among its ' +
            '`allowedModels`); or the request expired or was cancelled while waited for (with `X-Request-Id`).',
          { 'X-Request-Id': 'optional', ...rateLimited },
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
        '500': openAiErrorAnswer(
          'The request failed for good (`server_error`, after its retries: `X-Should-Retry: false`, submit it ' +
            'again if it is still wanted); or an unexpected fault (`Retry-After: 30`): retry.',
          { 'X-Should-Retry': 'optional', 'X-Request-Id': 'optional', 'Retry-After': 'optional' },
        ),
        '503': openAi.stopping(true),
      },
    },
  },
} as const;
