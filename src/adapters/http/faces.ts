import { type ApiError, Unavailable } from '../../domain/errors.js';
import { errorResponse, serverErrorResponse } from './errorResponse.js';
import { openAiErrorResponse, openAiFaultResponse } from './openai/errors.js';
import { isOpenAiPath } from './openai/routes.js';
import type { HeaderBag } from './route.js';

/** How a face of the API answers what is not a result: an error, a fault, a call while draining. */
export type Face = {
  readonly error: (error: ApiError, headers?: HeaderBag) => Response;
  readonly fault: (headers?: HeaderBag) => Response;
};
export const airsFace: Face = { error: errorResponse, fault: serverErrorResponse };
export const openAiFace: Face = { error: openAiErrorResponse, fault: openAiFaultResponse };
/** The face a path belongs to, for answers made before routing (a path h3 cannot parse). */
export const faceOf = (pathname: string): Face => (isOpenAiPath(pathname) ? openAiFace : airsFace);

/** A draining server's answer: retry (elsewhere, or here after the restart) on a new connection. */
export const notAccepting = (face: Face, headers: HeaderBag) =>
  face.error(new Unavailable({ message: 'the service is stopping; retry shortly', retryAfterSeconds: 5 }), {
    ...headers,
    Connection: 'close',
  });
