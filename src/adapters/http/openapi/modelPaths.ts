import { bearer, headersTooLarge, jsonContent, rateLimited, requestTimedOut, responseHeaders } from './components.js';
import { idParameter, openAi, openAiErrorAnswer, otherMethods } from './openAiAnswers.js';

/** The `/v1/models` paths of the OpenAPI document (OpenAI-compatible): the configured models. */

export const modelPaths = {
  '/v1/models': {
    description: otherMethods('GET'),
    get: {
      operationId: 'listModels',
      summary: 'List the configured models (OpenAI-compatible)',
      tags: ['OpenAI-compatible'],
      security: bearer,
      responses: {
        '200': {
          description: 'The configured models. Spends a poll.',
          headers: responseHeaders(rateLimited),
          content: jsonContent('ModelList'),
        },
        '401': openAi.unauthorized(),
        '403': openAi.forbidden(),
        '429': openAi.rateLimited('polls'),
        '408': requestTimedOut(),
        '431': headersTooLarge(),
        '500': openAi.fault(),
        '503': openAi.stopping(),
      },
    },
  },
  '/v1/models/{id}': {
    description: otherMethods('GET'),
    get: {
      operationId: 'retrieveModel',
      summary: 'A configured model (OpenAI-compatible)',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [idParameter('A model id, as `GET /v1/models` lists them.')],
      responses: {
        '200': {
          description: 'The model. Spends a poll.',
          headers: responseHeaders(rateLimited),
          content: jsonContent('Model'),
        },
        '400': openAi.unparsablePath(),
        '401': openAi.unauthorized(),
        '403': openAi.forbidden(),
        '404': openAiErrorAnswer('No model with this id is configured (`not_found`).', rateLimited),
        '429': openAi.rateLimited('polls'),
        '408': requestTimedOut(),
        '431': headersTooLarge(),
        '500': openAi.fault(),
        '503': openAi.stopping(),
      },
    },
  },
} as const;
