import type { H3Event } from 'h3';
import type { Logger } from 'pino';
import type { HttpRoute } from '../../app/Metrics.js';
import { unavailableFor } from '../../app/StorageHealth.js';
import { InvalidRequest } from '../../domain/errors.js';
import { StorageFault } from '../../ports/Store.js';
import type { Cors } from './cors.js';
import { isApiError } from './errorResponse.js';
import { airsFace, type Face, notAccepting } from './faces.js';
import { MalformedUpload } from './multipartUpload.js';
import { ClientGone } from './requestBody.js';
import type { HeaderBag, Route } from './route.js';
import type { Traffic } from './traffic.js';

export type GuardDeps = {
  readonly log: Logger;
  /** False while starting or draining: every call then answers 503. */
  readonly accepting: () => boolean;
  /** Counts the calls being answered, for a stopping server (see traffic.ts). */
  readonly traffic: Traffic;
  /** Counts a call by route and status; a function that does nothing without metrics. */
  readonly count: (slot: HttpRoute, status: number, startedAt: number) => void;
  /** Absent without allowed origins: the hot path then does not even read the Origin header. */
  readonly cors: Cors | undefined;
};

/**
 * What runs around every route of the API: CORS, the draining server's 503, the count of calls in flight and by
 * status; domain errors turned into the face's answers and faults into a bare 500.
 */
export const createGuard = (deps: GuardDeps) => {
  const { traffic, count, cors } = deps;
  const counted = (slot: HttpRoute, startedAt: number, response: Response): Response => {
    count(slot, response.status, startedAt);
    return response;
  };
  return (route: Route, slot: HttpRoute, face: Face = airsFace) =>
    async (event: H3Event) => {
      const startedAt = performance.now();
      const headers: HeaderBag = {};
      if (cors !== undefined) {
        const preflight = cors.preflight(event.req.method, event.url.pathname, event.req.headers);
        if (preflight !== undefined) return counted(slot, startedAt, preflight);
        cors.answerHeaders(event.url.pathname, event.req.headers.get('origin'), headers);
      }
      if (!deps.accepting()) {
        traffic.lastArrivalAt = Date.now();
        return counted(slot, startedAt, notAccepting(face, headers));
      }
      traffic.inFlight++;
      try {
        const result = await route(event, headers);
        return counted(slot, startedAt, isApiError(result) ? face.error(result, headers) : result);
      } catch (error) {
        if (error instanceof ClientGone) {
          deps.log.info({ path: event.url.pathname }, 'the client closed its connection before its body arrived');
          return counted(slot, startedAt, face.error(new InvalidRequest({ message: error.message }), headers));
        }
        // An upload's form broke off while its file was read (a second file part, no closing boundary): the client's
        // body, told as such wherever in the upload it was met, and logged as a client's bad input (no stack).
        if (error instanceof MalformedUpload) {
          const { param, message } = error.refusal;
          deps.log.info({ path: event.url.pathname, reason: message }, "an upload's form is malformed");
          const details = param === null ? undefined : { param };
          return counted(slot, startedAt, face.error(new InvalidRequest({ message, details }), headers));
        }
        // The store's disk fails, or its database cannot be reached: a 503 to retry, said once by StorageHealth.
        if (error instanceof StorageFault) return counted(slot, startedAt, face.error(unavailableFor(error), headers));
        deps.log.error({ err: error, path: event.url.pathname }, 'request failed');
        return counted(slot, startedAt, face.fault(headers));
      } finally {
        traffic.inFlight--;
      }
    };
};

export type Guard = ReturnType<typeof createGuard>;
