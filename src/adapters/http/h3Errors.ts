import type { H3Event, HTTPError } from 'h3';
import type { Logger } from 'pino';
import { unavailableFor } from '../../app/StorageHealth.js';
import { InvalidRequest } from '../../domain/errors.js';
import { StorageFault } from '../../ports/Store.js';
import { faceOf } from './faces.js';
import type { HeaderBag } from './route.js';

/**
 * The answers h3 makes itself, outside the routes (a malformed path, say), in the contract's shape of the path's
 * face; for h3's `onError`. `corsHeaders` gives the CORS headers of an answer made outside the routes.
 */
export const h3ErrorAnswer =
  (log: Logger, corsHeaders: (event: H3Event) => HeaderBag) =>
  (error: HTTPError, event: H3Event): Response => {
    const face = faceOf(event.url.pathname);
    if (error.cause instanceof StorageFault) return face.error(unavailableFor(error.cause), corsHeaders(event));
    if (error.status >= 500) {
      // A fault no route answered: logged once, as one JSON line of the app's log (h3 itself is silent).
      log.error({ err: error.cause ?? error, path: event.url.pathname.slice(0, 200) }, 'request failed');
      return face.fault(corsHeaders(event));
    }
    return face.error(
      new InvalidRequest({
        message:
          error.message && error.message !== 'Bad Request'
            ? error.message
            : 'the request could not be parsed (for example, invalid percent-encoding in the path)',
      }),
      corsHeaders(event),
    );
  };
