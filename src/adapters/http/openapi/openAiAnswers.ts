import {
  errorAnswer,
  headersTooLarge,
  jsonContent,
  rateLimited,
  rateLimitedIfAdmitted,
  requestTimedOut,
  responseHeaders,
} from './components.js';

/**
 * The answers and parameters that the OpenAI-compatible face's paths share (contract section 11): its refusals in
 * OpenAI's error shape, a path's id, the other methods' 405, and the Files and Batches APIs' lists and refusals.
 */

/** What a submit's 429 may also be (contract 21): the account's token limits. */
const tokenLimitWords =
  '; or the tokens of its requests that ended in the last 60 s are at its `tokensPerMinute` (code `rate_limited`); ' +
  'or it used its `tokensPerDay` or `tokensPerMonth` budget (code `insufficient_quota`, `X-Should-Retry: false`, ' +
  '`Retry-After` until the budget resets, named in the message)';

/** An error of the OpenAI-compatible face: OpenAI's shape (`OpenAIError`). */
export const openAiErrorAnswer = (description: string, names: Parameters<typeof responseHeaders>[0] = {}) =>
  errorAnswer(description, names, 'OpenAIError');

export const openAi = {
  unauthorized: () =>
    openAiErrorAnswer('No usable key: missing, not `Bearer <key>`, unknown or revoked (`authentication_error`).', {
      'WWW-Authenticate': 'required',
    }),
  forbidden: () => openAiErrorAnswer('A valid key whose account is suspended (`permission_error`).'),
  /** `longCall`: the route may hold its connection (a stream, a create that waits), so it takes an open call's place. */
  rateLimited: (budget: 'submits' | 'polls', longCall = false) =>
    openAiErrorAnswer(
      `The account’s ${budget} budget is spent (\`rate_limit_error\`, code \`rate_limited\`)` +
        (budget === 'submits' && longCall ? tokenLimitWords : '') +
        (longCall
          ? '; or, for a stream or a create that waits, the account already holds its plan’s `maxOpenCalls` open ' +
            'calls in this server process (the budget was spent all the same).'
          : '.'),
      { 'Retry-After': 'required', ...(longCall ? { 'X-Should-Retry': 'optional' as const } : {}), ...rateLimited },
    ),
  fault: () =>
    openAiErrorAnswer('An unexpected fault (`Retry-After: 30`): retry.', {
      'Retry-After': 'required',
    }),
  stopping: (longCall = false) =>
    openAiErrorAnswer(
      'The server is stopping (`Retry-After: 5`, `Connection: close`), its write queue is full, or its queue of ' +
        'work grows faster than its workers take it (`processing.maxBacklog`) (`Retry-After: 1` for both)' +
        (longCall
          ? ', or, for a stream or a create that waits, the server process holds its share of long-lived calls ' +
            '(`http.maxLongCallsShare` of `http.maxConnections`)'
          : '') +
        ': nothing was created; try again.',
      { 'Retry-After': 'required' },
    ),
  /** A 400 on a path with an id: from the route, or from h3 for a path it cannot parse (OpenAI's shape too). */
  unparsablePath: (description?: string) =>
    openAiErrorAnswer(
      `${description === undefined ? 'A' : `${description} Or a`} path h3 cannot parse (invalid ` +
        'percent-encoding), answered before the route, without the RateLimit headers.',
      rateLimitedIfAdmitted,
    ),
};

export const idParameter = (description: string) => ({
  name: 'id',
  in: 'path',
  required: true,
  description,
  schema: { type: 'string', minLength: 1 },
});

export const otherMethods = (allow: string) =>
  `Any other method answers \`405 method_not_allowed\` (OpenAI’s error shape) with \`Allow: ${allow}\`.`;

/**
 * The lists' query parameters. Written here by hand: the routes read them from the URL by hand
 * (openai/batches/routes.ts, limitOf), with the bounds shown (listLimits).
 */
export const afterParameter = (what: string) => ({
  name: 'after',
  in: 'query',
  required: false,
  description: `The ${what} id after which the page begins (a page’s \`last_id\`); an unknown one gives an empty page.`,
  schema: { type: 'string' },
});

export const limitParameter = (bounds: { readonly max: number; readonly fallback: number }) => ({
  name: 'limit',
  in: 'query',
  required: false,
  description: `How many items a page holds at most (400 outside 1 to ${bounds.max}).`,
  schema: { type: 'integer', minimum: 1, maximum: bounds.max, default: bounds.fallback },
});

export const jsonAnswer = (description: string, schemaName: string) => ({
  description,
  headers: responseHeaders(rateLimited),
  content: jsonContent(schemaName),
});

/** What every Files and Batches route may answer besides its own statuses. */
export const batchRouteErrors = (budget: 'submits' | 'polls') => ({
  '401': openAi.unauthorized(),
  '403': openAi.forbidden(),
  '429': openAi.rateLimited(budget),
  '408': requestTimedOut(),
  '431': headersTooLarge(),
  '500': openAi.fault(),
  '503': openAi.stopping(),
});

/** A create that writes (an upload, a batch): the server stopping, or its disk under its free-space floor. */
export const diskFloor = () =>
  openAiErrorAnswer(
    'The server is stopping, its write queue is full, or the data directory’s disk is under its free-space floor ' +
      '(`storage.minFreeMegabytes`; `Retry-After: 30`), told before the body is read; an upload that takes the disk ' +
      'under the floor while it streams is stopped and nothing of it is kept. Nothing was created; try again.',
    { 'Retry-After': 'required' },
  );
