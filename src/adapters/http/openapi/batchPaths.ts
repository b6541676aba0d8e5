import { listLimits } from '../openai/batches/routes.js';
import { bearer, jsonContent, rateLimited, rateLimitedIfAdmitted } from './components.js';
import {
  afterParameter,
  batchRouteErrors,
  diskFloor,
  idParameter,
  jsonAnswer,
  limitParameter,
  openAi,
  openAiErrorAnswer,
  otherMethods,
} from './openAiAnswers.js';

/** The `/v1/batches` paths of the OpenAPI document (OpenAI's Batch API, contract 16). */

const batchIdParameter = idParameter('The batch’s `id` (`batch_…`).');
const unknownBatch = () => openAiErrorAnswer('Unknown id, or one of another account (`not_found`).', rateLimited);

export const batchPaths = {
  '/v1/batches': {
    description: otherMethods('POST, GET'),
    post: {
      operationId: 'createBatch',
      summary: 'Create a batch of an uploaded file (OpenAI-compatible)',
      description:
        'Answers once the batch is committed, `validating`: each line becomes a request in the same queue. Spends ' +
        'a submit; its lines spend neither the per-minute submits nor `maxQueued`.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      requestBody: { required: true, content: jsonContent('BatchCreate') },
      responses: {
        '200': jsonAnswer('The Batch, `validating`.', 'Batch'),
        '400': openAiErrorAnswer(
          'Malformed JSON or a body over the JSON bounds; a body `BatchCreate` refuses (the field named in ' +
            '`param`); an input file that is not a `batch` upload (`param: "input_file_id"`); a `Content-Type` ' +
            'that is not JSON. Or a client that closed its connection before its body arrived.',
          rateLimitedIfAdmitted,
        ),
        '404': openAiErrorAnswer(
          'The input file is unknown, another account’s, deleted or expired (`not_found`).',
          rateLimited,
        ),
        '413': openAiErrorAnswer(
          'The body is larger than `maxBodyBytes`; refused without reading it all.',
          rateLimited,
        ),
        ...batchRouteErrors('submits'),
        '429': openAiErrorAnswer(
          'The account’s submits budget is spent, or it has its plan’s `maxBatchesInProgress` batches not ended ' +
            '(`rate_limit_error`, code `rate_limited`); or it used its `tokensPerDay` or `tokensPerMonth` budget ' +
            '(code `insufficient_quota`).',
          { 'Retry-After': 'required', ...rateLimited },
        ),
        '503': diskFloor(),
      },
    },
    get: {
      operationId: 'listBatches',
      summary: 'List the account’s batches, newest first (OpenAI-compatible)',
      description: 'Spends a poll.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [afterParameter('batch'), limitParameter(listLimits.batches)],
      responses: {
        '200': jsonAnswer('A page of the batches.', 'BatchList'),
        '400': openAiErrorAnswer('`limit` out of its bounds (`param: "limit"`).', rateLimited),
        ...batchRouteErrors('polls'),
      },
    },
  },
  '/v1/batches/{id}': {
    description: otherMethods('GET'),
    get: {
      operationId: 'retrieveBatch',
      summary: 'A batch, with its counts exact at every read (OpenAI-compatible)',
      description: 'Spends a poll.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [batchIdParameter],
      responses: {
        '200': jsonAnswer('The Batch.', 'Batch'),
        '400': openAi.unparsablePath(),
        '404': unknownBatch(),
        ...batchRouteErrors('polls'),
      },
    },
  },
  '/v1/batches/{id}/cancel': {
    description: otherMethods('POST'),
    post: {
      operationId: 'cancelBatch',
      summary: 'Cancel a batch (OpenAI-compatible)',
      description:
        'Queued lines are cancelled at once; running ones finish (or are aborted) within the model’s timeout; ' +
        'then `cancelled`. No body is read. Spends a poll.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [batchIdParameter],
      responses: {
        '200': jsonAnswer(
          'The Batch, `cancelling`; or as it is, once it ended or while it finalizes or expires.',
          'Batch',
        ),
        '400': openAi.unparsablePath(),
        '404': unknownBatch(),
        ...batchRouteErrors('polls'),
      },
    },
  },
} as const;
