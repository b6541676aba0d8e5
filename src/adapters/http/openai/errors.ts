import type { ApiError } from '../../../domain/errors.js';
import { answer, detailsOf, jsonHeaders, statusOf } from '../errorResponse.js';

/** OpenAI's error types by status: what its SDKs and clients expect beside the status. */
const typeOf = (status: number): string => {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
};

/**
 * An error on the OpenAI-compatible routes: OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`, with
 * the same status and headers as on `/v1/ai` (contract 11), so the SDKs raise their usual classes. `code` is the
 * contract's code; `param` names the body field at fault when the parser knows it.
 */
export const openAiErrorResponse = (error: ApiError, extraHeaders?: Record<string, string>): Response => {
  const { status: given, headers } = statusOf(error);
  // A model the account does not know (unknown, or not among its allowedModels) is OpenAI's 404 model_not_found.
  const status = isUnknownModel(error) ? 404 : given;
  return answer(status, JSON.stringify({ error: openAiErrorObject(error) }), {
    ...extraHeaders,
    ...jsonHeaders,
    ...headers,
  });
};

/** A refusal of a model that does not exist for the caller (submission.ts names the models it knows instead). */
const isUnknownModel = (error: ApiError) =>
  error._tag === 'InvalidRequest' && error.details?.known_models !== undefined;

/** The `error` object of OpenAI's error shape, also sent as an event of a stream that ends in an error. */
export const openAiErrorObject = (error: ApiError) => {
  const { status, code: given } = statusOf(error);
  const code = isUnknownModel(error) ? 'model_not_found' : given;
  const details = detailsOf(error);
  // The service's own details name the field too: a model it does not know, an input over the size limit.
  const param =
    details?.param ??
    (details?.known_models !== undefined
      ? 'model'
      : details?.max_prompt_chars !== undefined || details?.max_prompt_bytes !== undefined
        ? 'input'
        : undefined);
  return { message: error.message, type: typeOf(status), param: typeof param === 'string' ? param : null, code };
};

/** An unexpected fault: a fixed message, as on `/v1/ai`. */
export const openAiFaultResponse = (extraHeaders?: Record<string, string>): Response =>
  answer(
    500,
    JSON.stringify({
      error: {
        message: 'internal error; retry after 30 seconds',
        type: 'server_error',
        param: null,
        code: 'server_error',
      },
    }),
    { ...extraHeaders, ...jsonHeaders, 'Retry-After': '30' },
  );
