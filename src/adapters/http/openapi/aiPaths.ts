import {
  bearer,
  errorAnswer,
  headersTooLarge,
  jsonContent,
  rateLimited,
  rateLimitedIfAdmitted,
  ref,
  requestTimedOut,
  responseHeaders,
} from './components.js';

/** The `/v1/ai` path of the OpenAPI document: submit a prompt (POST) and poll for it (GET). */

const stopping = () =>
  errorAnswer(
    'The server is stopping (`Retry-After: 5`, `Connection: close`), its write queue is full, or its queue of work ' +
      'grows faster than its workers take it (`processing.maxBacklog`) (`Retry-After: 1` for both): nothing was ' +
      'created; try again.',
    { 'Retry-After': 'required' },
  );

export const aiPaths = {
  '/v1/ai': {
    post: {
      operationId: 'submitRequest',
      summary: 'Submit a prompt',
      security: bearer,
      parameters: [ref('parameters', 'Idempotency-Key'), ref('parameters', 'Cancel-After')],
      requestBody: { required: true, content: jsonContent('SubmitRequest') },
      responses: {
        '202': {
          description: 'Accepted, and durably on disk: poll the `Location`.',
          headers: responseHeaders({ Location: 'required', 'Idempotent-Replayed': 'optional', ...rateLimited }),
          content: jsonContent('Accepted'),
        },
        '400': errorAnswer(
          'Malformed JSON, JSON nested deeper than `maxJsonDepth` (64) or holding more than `maxJsonValues` ' +
            '(100,000) values, a body that is not an object, `model` or `prompt` missing or not a string, an empty ' +
            'or too long prompt (`maxPromptChars`, `maxPromptBytes`), an unknown model, or a `Content-Type` that ' +
            'is not JSON (with the RateLimit headers); ' +
            'or a request Node or h3 cannot parse (without them).',
          rateLimitedIfAdmitted,
        ),
        '401': errorAnswer('No usable key: missing, not `Bearer <key>`, unknown or revoked.', {
          'WWW-Authenticate': 'required',
        }),
        '403': errorAnswer('A valid key whose account is suspended.'),
        '413': errorAnswer('The body is larger than `maxBodyBytes`; refused without reading it all.', rateLimited),
        '429': errorAnswer(
          'The account’s submits budget is spent (`details.budget`, `details.retry_after_seconds`); or its token ' +
            'limits refuse (contract 21): `rate_limited` for `tokensPerMinute` (`details.budget`: `tokens`), ' +
            '`insufficient_quota` once `tokensPerDay` or `tokensPerMonth` is used (`details`: `budget`, `limit`, ' +
            '`used`, `resets_at`).',
          {
            'Retry-After': 'required',
            ...rateLimited,
          },
        ),
        '422': errorAnswer(
          'The `Idempotency-Key` was used by this account with another body (`idempotency_key_reused`).',
          rateLimited,
        ),
        '408': requestTimedOut(),
        '431': headersTooLarge(),
        '500': errorAnswer('An unexpected fault (`Retry-After: 30`): retry.', { 'Retry-After': 'optional' }),
        '503': stopping(),
      },
    },
    get: {
      operationId: 'pollRequest',
      summary: 'Poll a request',
      security: bearer,
      parameters: [
        {
          name: 'req_id',
          in: 'query',
          required: true,
          description: 'The `request_id` the submit answered.',
          schema: { type: 'string', minLength: 1 },
        },
        {
          name: 'Prefer',
          in: 'header',
          required: false,
          description:
            '`wait=N` (RFC 7240; other preferences are ignored): a long poll, held until the request is final or ' +
            '`N` seconds pass (capped at `http.maxPollWaitSeconds`, 60 by default). It spends one poll of the ' +
            'budget and holds a place among the account’s open calls (`maxOpenCalls`) while it waits; without a ' +
            'place it is answered at once.',
          schema: { type: 'string', examples: ['wait=30'] },
        },
      ],
      responses: {
        '200': {
          description:
            '`queued` (with `Retry-After`: poll again then; at once if `Preference-Applied` is there) or ' +
            '`completed` (with the response).',
          headers: responseHeaders({ 'Retry-After': 'optional', 'Preference-Applied': 'optional', ...rateLimited }),
          content: jsonContent('PollAnswer'),
        },
        '400': errorAnswer(
          '`req_id` missing or empty (with the RateLimit headers), or a request Node or h3 cannot parse (without them).',
          rateLimitedIfAdmitted,
        ),
        '401': errorAnswer('No usable key: missing, not `Bearer <key>`, unknown or revoked.', {
          'WWW-Authenticate': 'required',
        }),
        '403': errorAnswer('A valid key whose account is suspended.'),
        '404': errorAnswer('Unknown `req_id`, one of another account, or one older than 24 hours.', rateLimited),
        '429': errorAnswer('The account’s polls budget is spent (`details.budget`, `details.retry_after_seconds`).', {
          'Retry-After': 'required',
          ...rateLimited,
        }),
        '408': requestTimedOut(),
        '431': headersTooLarge(),
        '500': errorAnswer(
          'The request’s processing failed for good: `details.final` is `true` and there is no `Retry-After` ' +
            '(submit again). Or an unexpected fault, with `Retry-After: 30` (retry).',
          { 'Retry-After': 'optional', ...rateLimitedIfAdmitted },
        ),
        '503': stopping(),
      },
    },
  },
} as const;
