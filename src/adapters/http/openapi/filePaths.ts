import { uploadPurposes } from '../../../app/batches/Files.js';
import { expiresAfterBounds } from '../openai/batches/bodies.js';
import { listLimits } from '../openai/batches/routes.js';
import { bearer, rateLimited, rateLimitedIfAdmitted, ref, responseHeaders } from './components.js';
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

/** The `/v1/files` paths of the OpenAPI document (OpenAI's Files API, contract 16), and the upload's form. */

/**
 * The upload form of `POST /v1/files`. Written here by hand: the route reads the form with busboy as it streams
 * (adapters/http/multipartUpload.ts) and checks its fields by hand (openai/batches/routes.ts, uploadExpiry), so there is
 * no zod schema to generate it from.
 */
export const fileUploadForm = {
  type: 'object',
  description:
    'A `multipart/form-data` form: `purpose` and the `file` part (one), and optionally `expires_after[anchor]` ' +
    'with `expires_after[seconds]`. A field sent before `file` (as the official SDKs send `purpose`) is checked ' +
    'before the bytes are read; one sent after it, once they are stored (they are then removed if it is refused).',
  required: ['file', 'purpose'],
  properties: {
    file: {
      type: 'string',
      contentMediaType: 'application/octet-stream',
      description:
        'The file’s bytes: for a batch, JSONL, one request a line. At most `batches.maxFileBytes` (413 beyond); ' +
        'its name (the part’s `filename`) at most 255 characters, without control characters.',
    },
    purpose: { type: 'string', enum: [...uploadPurposes], description: 'Only `batch`: airs runs batches.' },
    'expires_after[anchor]': {
      type: 'string',
      enum: ['created_at'],
      description: 'With `expires_after[seconds]`: the file expires that long after its upload (else never).',
    },
    'expires_after[seconds]': {
      type: 'integer',
      minimum: expiresAfterBounds.minSeconds,
      maximum: expiresAfterBounds.maxSeconds,
      description: 'Whole seconds, from an hour to 30 days; with `expires_after[anchor]`.',
    },
  },
  dependentRequired: {
    'expires_after[anchor]': ['expires_after[seconds]'],
    'expires_after[seconds]': ['expires_after[anchor]'],
  },
};

const fileIdParameter = idParameter('The file’s `id` (`file-…`).');

const unknownFile = () =>
  openAiErrorAnswer('Unknown id, one of another account, or a file deleted or expired (`not_found`).', rateLimited);

export const filePaths = {
  '/v1/files': {
    description: otherMethods('POST, GET'),
    post: {
      operationId: 'uploadFile',
      summary: 'Upload a file: a batch’s input (OpenAI-compatible)',
      description:
        'The bytes stream to the store as they arrive (never whole in memory); the `200` comes once they are ' +
        'durably stored. Spends a submit.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      requestBody: {
        required: true,
        content: {
          'multipart/form-data': {
            schema: ref('schemas', 'FileUpload'),
            encoding: { file: { contentType: 'application/octet-stream' } },
          },
        },
      },
      responses: {
        '200': jsonAnswer('The File, stored.', 'File'),
        '400': openAiErrorAnswer(
          'Not a `multipart/form-data` form, or a malformed one; no `file` part, or two; `purpose` missing or not ' +
            '`batch`; `expires_after[anchor]` not `created_at`, or `expires_after[seconds]` not a whole number from ' +
            '3600 to 2592000 (named in `param`). Or a client that closed its connection before its form arrived.',
          rateLimitedIfAdmitted,
        ),
        '413': openAiErrorAnswer('The file is larger than `batches.maxFileBytes` (nothing is kept).', rateLimited),
        ...batchRouteErrors('submits'),
        '429': openAiErrorAnswer(
          'The account’s submits budget is spent; or, decided before the body is read, its files would hold more ' +
            'than its plan’s `maxFileStorageBytes` (a declared `Content-Length` is held whole), it keeps its plan’s ' +
            '`maxFiles` files, or it has its plan’s `maxConcurrentUploads` uploads streaming; named in the message ' +
            '(`rate_limit_error`, code `rate_limited`).',
          { 'Retry-After': 'required', ...rateLimited },
        ),
        '503': diskFloor(),
      },
    },
    get: {
      operationId: 'listFiles',
      summary: 'List the account’s files (OpenAI-compatible)',
      description: 'Uploads and batches’ output files, newest first unless `order=asc`. Spends a poll.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [
        {
          name: 'purpose',
          in: 'query',
          required: false,
          description: 'Only the files of this purpose (`batch`, `batch_output`).',
          schema: { type: 'string' },
        },
        afterParameter('file'),
        limitParameter(listLimits.files),
        {
          name: 'order',
          in: 'query',
          required: false,
          description: 'By creation time.',
          schema: { type: 'string', enum: ['asc', 'desc'], default: 'desc' },
        },
      ],
      responses: {
        '200': jsonAnswer('A page of the files.', 'FileList'),
        '400': openAiErrorAnswer('`limit` or `order` out of its bounds (named in `param`).', rateLimited),
        ...batchRouteErrors('polls'),
      },
    },
  },
  '/v1/files/{id}': {
    description: otherMethods('GET, DELETE'),
    get: {
      operationId: 'retrieveFile',
      summary: 'A file (OpenAI-compatible)',
      description: 'Spends a poll.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [fileIdParameter],
      responses: {
        '200': jsonAnswer('The File.', 'File'),
        '400': openAi.unparsablePath(),
        '404': unknownFile(),
        ...batchRouteErrors('polls'),
      },
    },
    delete: {
      operationId: 'deleteFile',
      summary: 'Delete a file (OpenAI-compatible)',
      description: 'A batch that already read its input file goes on. Spends a submit.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [fileIdParameter],
      responses: {
        '200': jsonAnswer('The file is deleted.', 'FileDeleted'),
        '400': openAi.unparsablePath(),
        '404': unknownFile(),
        ...batchRouteErrors('submits'),
      },
    },
  },
  '/v1/files/{id}/content': {
    description: otherMethods('GET'),
    get: {
      operationId: 'downloadFile',
      summary: 'A file’s bytes (OpenAI-compatible)',
      description: 'Streamed, as stored (JSONL for a batch’s files). Spends a poll.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [fileIdParameter],
      responses: {
        '200': {
          description: 'The bytes.',
          headers: {
            ...responseHeaders(rateLimited),
            'Content-Disposition': {
              description: '`attachment`, with the file’s name (`filename`, in ASCII, and `filename*`, in UTF-8).',
              required: true,
              schema: { type: 'string', pattern: '^attachment; ' },
            },
          },
          content: {
            'application/octet-stream': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } },
          },
        },
        '400': openAi.unparsablePath(),
        '404': unknownFile(),
        ...batchRouteErrors('polls'),
      },
    },
  },
} as const;
