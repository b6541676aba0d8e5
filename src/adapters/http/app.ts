import { isUtf8 } from 'node:buffer';
import { H3, type H3Event, HTTPError } from 'h3';
import type { Logger } from 'pino';
import type { AuthShape, Principal } from '../../app/Auth.js';
import type { BatchesShape } from '../../app/batches/Batches.js';
import type { FilesShape } from '../../app/batches/Files.js';
import type { LiveOutputShape } from '../../app/LiveOutput.js';
import { HttpRoute, type MetricsShape } from '../../app/Metrics.js';
import type { BudgetName, RateLimiterShape, RateLimitStatus } from '../../app/RateLimiter.js';
import type { RequestsShape } from '../../app/Requests.js';
import { unavailableFor } from '../../app/StorageHealth.js';
import type { UpstreamSeen } from '../../app/upstreamStates.js';
import {
  type ApiError,
  InvalidRequest,
  MethodNotAllowed,
  NotFound,
  PayloadTooLarge,
  Unavailable,
} from '../../domain/errors.js';
import { StorageFault } from '../../ports/Store.js';
import { acceptedBody, pollBody } from './ai/wire.js';
import { createCors } from './cors.js';
import { type DashboardDeps, mountDashboard } from './dashboard/routes.js';
import { answer, errorResponse, jsonHeaders, serverErrorResponse } from './errorResponse.js';
import { idempotencyKeyOf } from './idempotencyKey.js';
import { type JsonBounds, jsonBoundExceeded } from './jsonBounds.js';
import { mountMetrics } from './metricsRoute.js';
import { openAiErrorResponse, openAiFaultResponse } from './openai/errors.js';
import { isOpenAiPath, mountOpenAi, unknownPathError } from './openai/routes.js';
import { serveOpenApi } from './openapi.js';
import type { OpenCallsShape } from './openCalls.js';
import { preferredWaitSeconds } from './preferWait.js';
import { mountProbes } from './probes.js';
import { BodyTooLarge, ClientGone, readBodyBytes } from './requestBody.js';
import { createTraffic, type Traffic } from './traffic.js';

export type HttpDeps = {
  readonly auth: AuthShape;
  readonly rateLimiter: RateLimiterShape;
  readonly requests: RequestsShape;
  readonly log: Logger;
  readonly maxBodyBytes: number;
  /** OpenAI's Files and Batches APIs (contract 16). */
  readonly files?: FilesShape | undefined;
  readonly batches?: BatchesShape | undefined;
  /** How deep and wide a JSON body may be; checked before it is parsed. */
  readonly jsonBounds: JsonBounds;
  readonly pollIntervalSeconds: number;
  /** False while starting or draining: every call then answers 503. */
  readonly accepting: () => boolean;
  /** Counts the calls being answered, for a stopping server (see traffic.ts). */
  readonly traffic?: Traffic;
  /** The account dashboard's services; without them /dashboard is not served. */
  readonly dashboard?: DashboardDeps;
  /** What `/readyz` reports besides draining (the data directory's health); without it the probes are not served. */
  readonly readiness?: () => string | undefined;
  /** Each model's upstream as last seen, for `/readyz` (see upstreamStates.ts). */
  readonly upstreams?: () => Readonly<Record<string, UpstreamSeen>>;
  /** Counts calls by route and status and serves `GET /metrics`; without it nothing is counted or served. */
  readonly metrics?: { readonly metrics: MetricsShape; readonly token?: string | undefined };
  /** The configured models (ids and timeouts): with them the OpenAI-compatible face is served. */
  readonly models?: readonly { readonly id: string; readonly timeoutMs: number }[];
  /** Text of attempts in flight, for callers streaming them (the OpenAI face). */
  readonly live?: LiveOutputShape;
  /** Browser origins allowed to call /v1/* (`cors.allowedOrigins`); none: no CORS header. */
  readonly corsOrigins?: readonly string[];
  /** How long a stream may stay silent before a keep-alive comment (default 15 s, contract 13). */
  readonly streamKeepAliveMs?: number;
  /** The places of long-lived calls: streams and waiting creates, per account and for the process (contract 18). */
  readonly openCalls: OpenCallsShape;
  /** The longest `Prefer: wait` a poll is held for (`http.maxPollWaitSeconds`); 0 or absent: polls answer at once. */
  readonly maxPollWaitSeconds?: number;
  /** Aborts when the server starts to stop: held polls then answer at once, so that the drain is not held up. */
  readonly stopping?: AbortSignal;
};

/** How a face of the API answers what is not a result: an error, a fault, a call while draining. */
type Face = {
  readonly error: (error: ApiError, headers?: HeaderBag) => Response;
  readonly fault: (headers?: HeaderBag) => Response;
};
const airsFace: Face = { error: errorResponse, fault: serverErrorResponse };
const openAiFace: Face = { error: openAiErrorResponse, fault: openAiFaultResponse };
/** The face a path belongs to, for answers made before routing (a path h3 cannot parse). */
const faceOf = (pathname: string): Face => (isOpenAiPath(pathname) ? openAiFace : airsFace);

/** A draining server's answer: retry (elsewhere, or here after the restart) on a new connection. */
const notAccepting = (face: Face, headers: HeaderBag) =>
  face.error(new Unavailable({ message: 'the service is stopping; retry shortly', retryAfterSeconds: 5 }), {
    ...headers,
    Connection: 'close',
  });

const aiPath = '/v1/ai';
const aiMethods = ['GET', 'POST'] as const;

/** Response headers gathered while a call is answered: a plain object, cheaper than a `Headers` per call. */
export type HeaderBag = Record<string, string>;

/** The IETF draft RateLimit headers (structured-field form) for one budget. */
const rateLimitHeaders = (status: RateLimitStatus, headers: HeaderBag) => {
  headers['RateLimit-Policy'] = `"${status.budget}";q=${status.limit};w=${status.windowSeconds}`;
  headers.RateLimit = `"${status.budget}";r=${status.remaining};t=${status.resetSeconds}`;
};

const json = (status: number, body: unknown, headers: HeaderBag) => {
  headers['Content-Type'] = jsonHeaders['Content-Type'];
  return answer(status, JSON.stringify(body), headers);
};

/** `application/json`, with parameters or in any case; the exact common form is recognised without splitting. */
const isJsonContentType = (value: string | null) =>
  value === 'application/json' || (value !== null && value.split(';')[0]?.trim().toLowerCase() === 'application/json');

/**
 * Reads the body as JSON within the byte limit; an oversized body is refused as soon as it is known (a declared
 * length over the limit before reading anything, a streamed one when it passes the limit). Bytes that are not UTF-8
 * are refused rather than decoded into U+FFFD: the stored prompt would differ from the one sent. A body deeper or
 * wider than `bounds` is refused from its bytes, before `JSON.parse` builds anything (contract 15).
 */
const readJsonBody = async (event: H3Event, maxBodyBytes: number, bounds: JsonBounds): Promise<unknown | ApiError> => {
  if (!isJsonContentType(event.req.headers.get('content-type'))) {
    return new InvalidRequest({ message: 'Content-Type must be application/json' });
  }
  // Built only when needed: an error value captures a stack trace, which costs more than the rest of a request.
  const tooLarge = () => new PayloadTooLarge({ message: `request body is larger than ${maxBodyBytes} bytes` });
  if (Number(event.req.headers.get('content-length')) > maxBodyBytes) return tooLarge();
  let bytes: Buffer;
  try {
    bytes = await readBodyBytes(event, maxBodyBytes);
  } catch (error) {
    if (error instanceof BodyTooLarge) return tooLarge();
    if (error instanceof HTTPError && error.status === 400) {
      return new InvalidRequest({ message: 'request body could not be read' });
    }
    throw error;
  }
  if (!isUtf8(bytes)) return new InvalidRequest({ message: 'body is not valid UTF-8' });
  const beyond = jsonBoundExceeded(bytes, bounds);
  if (beyond !== undefined)
    return new InvalidRequest({
      message: beyond.message,
      details:
        beyond.bound === 'maxJsonDepth' ? { max_json_depth: bounds.maxDepth } : { max_json_values: bounds.maxValues },
    });
  try {
    return JSON.parse(bytes.toString('utf8')) as unknown;
  } catch (error) {
    return new InvalidRequest({ message: `body is not valid JSON: ${(error as Error).message.slice(0, 200)}` });
  }
};

const isApiError = (value: unknown): value is ApiError =>
  typeof value === 'object' && value !== null && '_tag' in value && value instanceof Error;

/**
 * The HTTP adapter: `POST /v1/ai` is the submit command, `GET /v1/ai` the poll query. Every call goes through the
 * same steps in the contract's order: auth, then rate limit, then input, then lookup; every failure leaves as the
 * contract's error shape through one table (errorResponse.ts).
 */
export const createHttpApp = (deps: HttpDeps): H3 => {
  /** Auth and rate limit, the shared front of both endpoints. Headers gathered here go on every answer. */
  const admit = async (
    event: H3Event,
    budget: BudgetName,
    headers: HeaderBag,
    refusesNow?: () => ApiError | undefined,
  ): Promise<Principal | ApiError> => {
    const principal = await deps.auth.authenticate(event.req.headers.get('authorization'));
    if (isApiError(principal)) return principal;
    // A submit the server would refuse whatever its body (processing/admission.ts) is refused before it spends the
    // caller's budget and before its body is read: under a flood, a refusal must cost the workers little.
    const refused = refusesNow?.();
    if (refused !== undefined) return refused;
    const spent = await deps.rateLimiter.take(principal, budget);
    rateLimitHeaders(spent.status, headers);
    return spent.refusal ?? principal;
  };

  const readBody = (event: H3Event) => readJsonBody(event, deps.maxBodyBytes, deps.jsonBounds);

  /**
   * Reads the body and hands it to the submit. The parsed body lives only in this call, which returns as soon as the
   * submit has taken what it keeps (the prompt, the body's hash): a caller awaiting the commit must not hold it, since
   * V8 keeps an async function's locals alive across an await whether or not they are used after it.
   */
  const readAndSubmit = async (event: H3Event, principal: Principal, key: string | undefined) => {
    const body = await readBody(event);
    if (isApiError(body)) return body;
    return deps.requests.submit(
      principal,
      body,
      key === undefined ? undefined : { idempotency: { key, fingerprint: ['ai', body] } },
    );
  };

  const submit = async (event: H3Event, headers: HeaderBag): Promise<Response | ApiError> => {
    const principal = await admit(event, 'submits', headers, deps.requests.refusesQueuing);
    if (isApiError(principal)) return principal;
    const key = idempotencyKeyOf(event.req.headers.get('idempotency-key'));
    if (isApiError(key)) return key;
    const accepted = await readAndSubmit(event, principal, key);
    if (isApiError(accepted)) return accepted;
    headers.Location = `${aiPath}?req_id=${accepted.reqId}`;
    if (accepted.replayed) headers['Idempotent-Replayed'] = 'true';
    return json(202, acceptedBody(accepted), headers);
  };

  const maxPollWaitSeconds = deps.maxPollWaitSeconds ?? 0;
  /**
   * The ends of the polls held now, called when the server stops: one listener on `stopping` for all of them (a
   * listener each would pass Node's warning threshold for an event target at the eleventh).
   */
  const heldPolls = new Set<() => void>();
  deps.stopping?.addEventListener(
    'abort',
    () => {
      for (const end of [...heldPolls]) end();
    },
    { once: true },
  );
  /** The seconds a poll asks to be held (`Prefer: wait=N`), capped at the server's bound; 0: answer at once. */
  const pollWaitOf = (event: H3Event): number =>
    maxPollWaitSeconds === 0
      ? 0
      : Math.min(preferredWaitSeconds(event.req.headers.get('prefer')) ?? 0, maxPollWaitSeconds);

  /**
   * A long poll: holds the call until the request is no longer queued, `seconds` pass, the caller goes away or the
   * server starts to stop; woken by what wakes a waiting create (this process's outcomes, other writers' changes),
   * never by reading the store in a loop. Only the account's own queued request is waited for (another's answers 404
   * at once, as before), and only while the call holds a place among the open calls (contract 18): where it gets none,
   * the poll answers at once as a plain poll would. Says whether the answer is the wait's ('applied': the request is
   * final, at once if it already was, or the N seconds passed), cut short by the server stopping ('stopping'), not
   * waited for ('not held'), or not to be given, the caller having left ('gone').
   */
  const holdPoll = async (
    principal: Principal,
    reqId: string,
    seconds: number,
    connection: AbortSignal,
  ): Promise<'applied' | 'not held' | 'stopping' | 'gone'> => {
    const view = await deps.requests.find(principal, reqId);
    if (!('status' in view)) return 'not held';
    if (view.status !== 'queued') return 'applied';
    const place = deps.openCalls.take(principal);
    if (isApiError(place)) return 'not held';
    // One signal for both ends of the wait: the connection's, and the server's stop (through `heldPolls`).
    const ended = new AbortController();
    const end = () => ended.abort();
    connection.addEventListener('abort', end, { once: true });
    heldPolls.add(end);
    try {
      if (connection.aborted || deps.stopping?.aborted === true) end();
      await deps.requests.settled(reqId, seconds * 1_000, ended.signal);
      return connection.aborted ? 'gone' : deps.stopping?.aborted === true ? 'stopping' : 'applied';
    } finally {
      connection.removeEventListener('abort', end);
      heldPolls.delete(end);
      place.answered();
    }
  };

  const poll = async (event: H3Event, headers: HeaderBag): Promise<Response | ApiError> => {
    const principal = await admit(event, 'polls', headers);
    if (isApiError(principal)) return principal;
    const reqId = event.url.searchParams.get('req_id') ?? undefined;
    const waitSeconds = pollWaitOf(event);
    if (waitSeconds > 0 && reqId !== undefined && reqId !== '') {
      // One poll of the budget was spent above, however long the call is held.
      const held = await holdPoll(principal, reqId, waitSeconds, event.req.signal);
      // Nobody reads this answer: the caller is gone (and the store is not read for it).
      if (held === 'gone') return new InvalidRequest({ message: 'the caller went away' });
      if (held === 'applied') headers['Preference-Applied'] = `wait=${waitSeconds}`;
      // A stopping server answers what it has and closes the connection: the next poll goes to a server that runs.
      if (held === 'stopping') headers.Connection = 'close';
    }
    const view = await deps.requests.poll(principal, reqId);
    if (isApiError(view)) return view;
    if (view.status === 'queued') headers['Retry-After'] = String(deps.pollIntervalSeconds);
    // A view is only found by a non-empty id.
    return json(200, pollBody(reqId as string, view), headers);
  };

  /** Runs a route, turning domain errors into the contract's answers and faults into a bare 500. */
  const traffic = deps.traffic ?? createTraffic();
  // Counting a call is a few array writes (Metrics.ts); without metrics, a function that does nothing.
  const count = deps.metrics?.metrics.http ?? (() => {});
  const counted = (slot: HttpRoute, startedAt: number, response: Response): Response => {
    count(slot, response.status, startedAt);
    return response;
  };
  // Without allowed origins there is no CORS at all: the hot path does not even read the Origin header.
  const cors = (deps.corsOrigins ?? []).length === 0 ? undefined : createCors(deps.corsOrigins ?? []);
  const guarded =
    (
      route: (event: H3Event, headers: HeaderBag) => Promise<Response | ApiError>,
      slot: HttpRoute,
      face: Face = airsFace,
    ) =>
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
        // The store's disk fails, or its database cannot be reached: a 503 to retry, said once by StorageHealth.
        if (error instanceof StorageFault) return counted(slot, startedAt, face.error(unavailableFor(error), headers));
        deps.log.error({ err: error, path: event.url.pathname }, 'request failed');
        return counted(slot, startedAt, face.fault(headers));
      } finally {
        traffic.inFlight--;
      }
    };

  /** CORS headers for an answer made outside the routes. */
  const corsHeaders = (event: H3Event): HeaderBag => {
    const headers: HeaderBag = {};
    cors?.answerHeaders(event.url.pathname, event.req.headers.get('origin'), headers);
    return headers;
  };

  /** A fault no route answered: logged once, as one JSON line of the app's log (h3 itself is silent). */
  const unhandled = (error: HTTPError, event: H3Event) => {
    deps.log.error({ err: error.cause ?? error, path: event.url.pathname.slice(0, 200) }, 'request failed');
    return faceOf(event.url.pathname).fault(corsHeaders(event));
  };

  const app = new H3({
    // h3 would write an unhandled error's stack to stderr as plain text, outside the JSON log: it is logged below.
    silent: true,
    // h3 answers some requests itself (a malformed path, say): give those the contract's shape too.
    onError: (error, event) =>
      error.cause instanceof StorageFault
        ? faceOf(event.url.pathname).error(unavailableFor(error.cause), corsHeaders(event))
        : error.status >= 500
          ? unhandled(error, event)
          : faceOf(event.url.pathname).error(
              new InvalidRequest({
                message:
                  error.message && error.message !== 'Bad Request'
                    ? error.message
                    : 'the request could not be parsed (for example, invalid percent-encoding in the path)',
              }),
              corsHeaders(event),
            ),
  });

  const routes = new Map<string, ReturnType<typeof guarded>>([
    ['GET', guarded(poll, HttpRoute.poll)],
    ['POST', guarded(submit, HttpRoute.submit)],
  ]);
  // Counted apart from the plain polls, whose latency they would swamp (a poll without `Prefer` costs one lookup).
  const longPoll = guarded(poll, HttpRoute.longPoll);
  const routeOf = (event: H3Event) =>
    event.req.method === 'GET' && pollWaitOf(event) > 0 ? longPoll : routes.get(event.req.method);
  const wrongMethod = guarded(
    async (event) =>
      new MethodNotAllowed({
        message: `${event.req.method} is not allowed on ${aiPath}; use GET or POST`,
        allow: aiMethods,
      }),
    HttpRoute.other,
  );
  app.all(aiPath, (event) => (routeOf(event) ?? wrongMethod)(event));
  if (deps.models !== undefined)
    mountOpenAi(app, {
      requests: deps.requests,
      models: deps.models,
      admit,
      readJsonBody: readBody,
      guard: (route, slot) => guarded(route, slot, openAiFace),
      json,
      startedAtSeconds: Math.floor(Date.now() / 1000),
      live: deps.live,
      accepting: deps.accepting,
      keepAliveMs: deps.streamKeepAliveMs ?? 15_000,
      openCalls: deps.openCalls,
      files: deps.files,
      batches: deps.batches,
    });
  if (deps.dashboard !== undefined) mountDashboard(app, deps.dashboard);
  app.get('/v1/openapi.json', (event) => serveOpenApi(corsHeaders(event)));
  if (deps.readiness !== undefined)
    mountProbes(app, { accepting: deps.accepting, problem: deps.readiness, upstreams: deps.upstreams });
  if (deps.metrics !== undefined) mountMetrics(app, deps.metrics);
  app.all(
    '/**',
    guarded(
      async (event) =>
        event.url.pathname.startsWith('/v1/')
          ? unknownPathError(event.url.pathname)
          : new NotFound({ message: `no such path: ${event.url.pathname.slice(0, 200)}` }),
      HttpRoute.other,
    ),
  );
  return app;
};
