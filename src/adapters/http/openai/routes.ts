import { getQuery, getRouterParam, type H3, type H3Event } from 'h3';
import type { Principal } from '../../../app/Auth.js';
import type { BatchesShape } from '../../../app/batches/Batches.js';
import type { FilesShape } from '../../../app/batches/Files.js';
import { type Follower, followRequest } from '../../../app/followRequest.js';
import { createLiveOutput, type LiveOutputShape } from '../../../app/LiveOutput.js';
import { HttpRoute } from '../../../app/Metrics.js';
import type { BudgetName } from '../../../app/RateLimiter.js';
import type { RequestsShape, RequestView } from '../../../app/Requests.js';
import { allowsModel } from '../../../domain/account/limits.js';
import { type ApiError, InvalidRequest, MethodNotAllowed, NotFound } from '../../../domain/errors.js';
import type { PassThroughOf } from '../../../modelPassThrough.js';
import { noteAccess, noteSubmitted } from '../accessNote.js';
import { isApiError } from '../errorResponse.js';
import { idempotencyKeyOf } from '../idempotencyKey.js';
import type { OpenCall, OpenCallsShape } from '../openCalls.js';
import type { HeaderBag, Route } from '../route.js';
import { batchRoutes } from './batches/routes.js';
import { chatCompletionsRoute } from './chat/routes.js';
import { invalid, type ResponseSettings } from './generationSettings.js';
import { parseResponsesCreate } from './input.js';
import { modelListOf, modelObjectOf } from './models.js';
import { itemPlaceOf, referencedItemOf, requestIdOf, responseObjectOf } from './responseObject.js';
import { responseStreamAnswer } from './responseStream.js';
import { cancelWhenCallerLeaves, waitUntilFinal } from './waitFinal.js';

/** A model as the OpenAI face sees it. */
export type FaceModel = {
  readonly id: string;
  readonly timeoutMs: number;
  readonly passThrough?: readonly string[] | undefined;
};

/** What the OpenAI face takes from the HTTP app: the same front (auth, limits, body) as `/v1/ai`, and its services. */
export type OpenAiFaceDeps = {
  readonly requests: RequestsShape;
  /** The configured models: their ids, how long a waiting create waits for each, and the fields each passes through. */
  readonly models: readonly FaceModel[];
  /** Auth, then the rate limit of `budget` (its headers go into `headers`). */
  admit(event: H3Event, budget: BudgetName, headers: HeaderBag): Promise<Principal | ApiError>;
  readJsonBody(event: H3Event): Promise<unknown | ApiError>;
  /** Runs a route with the app's guards (draining, faults, metrics), answering errors in OpenAI's shape. */
  guard(route: Route, slot: HttpRoute): (event: H3Event) => Promise<Response>;
  json(status: number, body: unknown, headers: HeaderBag): Response;
  /** When the server started (seconds): the `created` of the models. */
  readonly startedAtSeconds: number;
  /** Text of attempts in flight, for streaming callers. */
  readonly live?: LiveOutputShape | undefined;
  /** False while the server stops (a waiting caller's connection then closes with it, not by the caller). */
  accepting(): boolean;
  /** How long a stream may stay silent before a keep-alive comment. */
  readonly keepAliveMs: number;
  /** The places of long-lived calls (streams, waiting creates), per account and for the process (contract 18). */
  readonly openCalls: OpenCallsShape;
  /** OpenAI's Files and Batches APIs (contract 16), when the app runs them. */
  readonly files?: FilesShape | undefined;
  readonly batches?: BatchesShape | undefined;
};

/** The paths of the OpenAI-compatible face: everything under them answers errors in OpenAI's shape. */
const openAiPrefixes = ['/v1/models', '/v1/responses', '/v1/chat', '/v1/files', '/v1/batches'] as const;

/** Every route airs serves under /v1, for the 404 of a path it does not serve. */
export const servedRoutes =
  'POST /v1/ai, GET /v1/ai, GET /v1/models, GET /v1/models/{id}, POST /v1/chat/completions, POST /v1/responses, ' +
  'GET /v1/responses/{id}, POST /v1/responses/{id}/cancel, POST /v1/files, GET /v1/files, GET /v1/files/{id}, ' +
  'DELETE /v1/files/{id}, GET /v1/files/{id}/content, POST /v1/batches, GET /v1/batches, GET /v1/batches/{id}, ' +
  'POST /v1/batches/{id}/cancel, GET /v1/openapi.json';

/** The 404 of a path airs does not serve, naming those it serves. */
export const unknownPathError = (pathname: string) =>
  new NotFound({ message: `no such path: ${pathname.slice(0, 200)}; airs serves ${servedRoutes}` });

/**
 * A path's `{id}` as the caller meant it: percent-decoded, so that `org%2Fmodel-x` names `org/model-x` (a path that
 * cannot be decoded never gets here: it is refused before routing).
 */
export const pathIdOf = (event: H3Event): string => {
  const raw = getRouterParam(event, 'id') ?? '';
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
};

/**
 * Whether a path belongs to the OpenAI-compatible face, so that an error answered before routing (a malformed path)
 * can take OpenAI's shape there too.
 */
export const isOpenAiPath = (pathname: string): boolean =>
  openAiPrefixes.some((prefix) => pathname === prefix || pathname.startsWith(`${prefix}/`));

/** An error about a request, with its id as this face shows it (`resp_…`, not the `req_…` the service names). */
const inResponseTerms = (error: ApiError): ApiError => {
  const message = error.message.replace(/\breq_/g, 'resp_');
  if (message === error.message) return error;
  if (error instanceof NotFound) return new NotFound({ message });
  if (error instanceof InvalidRequest) return new InvalidRequest({ message, details: error.details });
  return error;
};

/** The requests an input's `item_reference`s name (at most 64: each is one read), without repeats. */
const referencedRequestsOf = (body: unknown): string[] => {
  const input = (body as { input?: unknown } | null)?.input;
  if (!Array.isArray(input)) return [];
  const ids = new Set<string>();
  for (const item of input) {
    const { type, id } = (item ?? {}) as { type?: unknown; id?: unknown };
    if (type !== 'item_reference' || typeof id !== 'string') continue;
    const place = itemPlaceOf(id);
    if (place !== undefined) ids.add(place.reqId);
    if (ids.size >= 64) break;
  }
  return [...ids];
};

/** The services' own param names, as this face names them: chat completions' `response_format` is `text.format`. */
const inFaceTerms = (error: ApiError): ApiError => {
  if (!(error instanceof InvalidRequest) || error.details?.param !== 'response_format') return error;
  return new InvalidRequest({
    message: error.message.replace(/^response_format\b/, 'text.format'),
    details: { ...error.details, param: 'text.format' },
  });
};

/** `?stream=` and `?starting_after=` of a retrieve: JSON, or the Response's events from `starting_after + 1`. */
const streamQueryOf = (
  event: H3Event,
): { readonly stream: false } | { readonly stream: true; readonly startingAfter?: number } | InvalidRequest => {
  const query = getQuery(event);
  const one = (name: string) => {
    const value = query[name];
    return Array.isArray(value) ? value.at(-1) : value;
  };
  const stream = one('stream');
  if (stream !== undefined && stream !== 'true' && stream !== 'false')
    return invalid('stream', 'must be true or false');
  const after = one('starting_after');
  if (after === undefined) return stream === 'true' ? { stream: true } : { stream: false };
  if (stream !== 'true') return invalid('starting_after', 'is for streams; add stream=true');
  if (typeof after !== 'string' || !/^\d{1,9}$/.test(after))
    return invalid('starting_after', 'must be a whole number (the sequence_number of the last event received)');
  return { stream: true, startingAfter: Number(after) };
};

/**
 * The fields each model passes through, by id: a lookup in a map, since it runs for every create, built again when
 * the models change (a reload gives a new list).
 */
export const passThroughLookup = (models: () => readonly FaceModel[]): PassThroughOf => {
  let seen: readonly FaceModel[] | undefined;
  let byId = new Map<string, readonly string[]>();
  return (model) => {
    const current = models();
    if (current !== seen) {
      seen = current;
      byId = new Map(current.flatMap((m) => (m.passThrough === undefined ? [] : [[m.id, m.passThrough] as const])));
    }
    return byId.get(model);
  };
};

/**
 * The OpenAI-compatible face (contract 11): `GET /v1/models`, `POST /v1/responses` (background or waiting),
 * `GET /v1/responses/{id}` and `POST /v1/responses/{id}/cancel`, over the same Requests service, limits, queue and
 * log as `/v1/ai`. A create spends a submit; a retrieve, a cancel and a model list spend a poll.
 */
export const mountOpenAi = (app: H3, deps: OpenAiFaceDeps): void => {
  const { requests } = deps;
  const passThroughOf = passThroughLookup(() => deps.models);
  const answerView = (view: RequestView | ApiError, headers: HeaderBag, settings?: ResponseSettings) =>
    isApiError(view)
      ? inResponseTerms(view)
      : deps.json(200, responseObjectOf(view, settings === undefined ? {} : { settings }), headers);
  const idOf = (event: H3Event) => requestIdOf(pathIdOf(event));
  /** A request read by a retrieve or a cancel, named on the call's access line. */
  const noted = <V extends RequestView | ApiError>(event: H3Event, view: V): V => {
    if (!isApiError(view)) noteAccess(event, { reqId: view.state.context.reqId, model: view.state.context.model });
    return view;
  };
  // Without the process's live output, streams hear nobody and get each answer whole when it is done.
  const live = deps.live ?? createLiveOutput();
  const follower = () => followRequest(live);

  /**
   * Reads, checks and queues a create's body. The parsed body lives only in this call, which returns once the submit
   * has taken what it keeps (the input, the body's hash): the create then waits (for the commit, and for the result)
   * holding only the request's id and model. V8 keeps an async function's locals alive across an await whether or not
   * they are used after it, so a body kept in the waiting function would stay in memory until the model answers.
   */
  const queueCreate = async (event: H3Event, principal: Principal, key: string | undefined) => {
    const body = await deps.readJsonBody(event);
    if (isApiError(body)) return body;
    // An `item_reference` may name an output item of one of the account's own Responses: those are read first.
    const referenced = new Map<string, RequestView>();
    for (const reqId of referencedRequestsOf(body)) {
      const view = await requests.find(principal, reqId);
      if (!isApiError(view)) referenced.set(reqId, view);
    }
    const parsed = parseResponsesCreate(
      body,
      (id) => referencedItemOf(id, (reqId) => referenced.get(reqId)),
      passThroughOf,
    );
    if (parsed instanceof InvalidRequest) return parsed;
    // A create that holds its connection (a stream, or one that waits for its answer) takes its place among the open
    // calls now, once its body says so and before anything is queued: a refused one leaves no request behind.
    const openCall: OpenCall | ApiError | undefined =
      parsed.stream || !parsed.background ? deps.openCalls.take(principal) : undefined;
    if (isApiError(openCall)) return openCall;
    try {
      // A stream listens to the request before its submit is committed, so that it hears the first attempt whole.
      const listening: Follower | undefined = parsed.stream ? follower() : undefined;
      return {
        background: parsed.background,
        stream: listening,
        settings: parsed.settings,
        openCall,
        submitted: requests.submitInput(principal, parsed.input, {
          idempotency: key === undefined ? undefined : { key, fingerprint: ['responses', body] },
          beforeCommit: listening === undefined ? undefined : (reqId) => listening.listen(reqId),
          face: 'responses',
          cancelAfter: event.req.headers.get('cancel-after'),
        }),
      };
    } catch (error) {
      openCall?.answered();
      throw error;
    }
  };

  /** A queued create's answer: its stream, its `queued` view (background), or its final view once it is final. */
  const answerCreate = async (
    principal: Principal,
    queued: Exclude<Awaited<ReturnType<typeof queueCreate>>, ApiError>,
    headers: HeaderBag,
    connection: AbortSignal,
  ): Promise<Response | ApiError> => {
    const submitted = await queued.submitted;
    if (isApiError(submitted)) {
      queued.stream?.stop();
      return inFaceTerms(submitted);
    }
    if (submitted.replayed) headers['Idempotent-Replayed'] = 'true';
    if (queued.stream !== undefined) {
      // A replay names an earlier request: listen to that one (from now on) instead of the id this submit had.
      let listening = queued.stream;
      if (submitted.replayed) {
        listening.stop();
        listening = follower();
      }
      const first = await requests.find(principal, submitted.reqId);
      if (isApiError(first)) {
        listening.stop();
        return inResponseTerms(first);
      }
      return responseStreamAnswer(first, {
        requests,
        principal,
        reqId: submitted.reqId,
        follower: listening,
        settings: queued.settings,
        headers,
        cancelOnDisconnect: !queued.background,
        connection,
        accepting: deps.accepting,
        openCall: queued.openCall,
      });
    }
    if (queued.background) {
      // Answered at once, as `queued` until it is finished (contract 11), also when a free worker took it already.
      const view = await requests.find(principal, submitted.reqId);
      return isApiError(view)
        ? view
        : deps.json(200, responseObjectOf(view, { unfinishedAs: 'queued', settings: queued.settings }), headers);
    }
    // Without `background`, the call waits until the request is final (contract 13), and cancels it if the caller
    // goes away first.
    const { settings } = queued;
    const view = await waitUntilFinal(requests, principal, submitted.reqId, connection);
    if (view !== undefined) return answerView(view, headers, settings);
    await cancelWhenCallerLeaves(requests, deps.accepting, principal, submitted.reqId)();
    // Nobody reads this answer: the caller is gone.
    return new InvalidRequest({ message: 'the caller went away; the request was cancelled' });
  };

  const create: Route = async (event, headers) => {
    const principal = await deps.admit(event, 'submits', headers);
    if (isApiError(principal)) return principal;
    // Taken now: the connection is watched from here on (srvx makes the signal when it is first asked for).
    const { signal } = event.req;
    const key = idempotencyKeyOf(event.req.headers.get('idempotency-key'));
    if (isApiError(key)) return key;
    const queued = await queueCreate(event, principal, key);
    if (isApiError(queued)) return queued;
    noteSubmitted(event, queued.submitted);
    try {
      return await answerCreate(principal, queued, headers, signal);
    } finally {
      // Given back now unless the answer is a stream, which gives it back when it ends.
      queued.openCall?.answered();
    }
  };

  const retrieve: Route = async (event, headers) => {
    const principal = await deps.admit(event, 'polls', headers);
    if (isApiError(principal)) return principal;
    const query = streamQueryOf(event);
    if (isApiError(query)) return query;
    if (!query.stream) return answerView(noted(event, await requests.find(principal, idOf(event))), headers);
    // A stream holds its connection until the request is final: it takes its place before the lookup.
    const openCall = deps.openCalls.take(principal);
    if (isApiError(openCall)) return openCall;
    try {
      const view = noted(event, await requests.find(principal, idOf(event)));
      if (isApiError(view)) return answerView(view, headers);
      return responseStreamAnswer(view, {
        requests,
        principal,
        reqId: view.state.context.reqId,
        follower: follower(),
        startingAfter: query.startingAfter,
        headers,
        cancelOnDisconnect: false,
        connection: event.req.signal,
        openCall,
      });
    } finally {
      openCall.answered();
    }
  };

  const cancel: Route = async (event, headers) => {
    const principal = await deps.admit(event, 'polls', headers);
    if (isApiError(principal)) return principal;
    return answerView(noted(event, await requests.cancel(principal, idOf(event))), headers);
  };

  const listModels: Route = async (event, headers) => {
    const principal = await deps.admit(event, 'polls', headers);
    if (isApiError(principal)) return principal;
    return deps.json(
      200,
      modelListOf(
        deps.models.map((m) => m.id).filter((id) => allowsModel(principal.limits, id)),
        deps.startedAtSeconds,
      ),
      headers,
    );
  };

  const retrieveModel: Route = async (event, headers) => {
    const principal = await deps.admit(event, 'polls', headers);
    if (isApiError(principal)) return principal;
    const id = pathIdOf(event);
    // A model the account may not use does not exist for it (allowedModels).
    if (!deps.models.some((m) => m.id === id) || !allowsModel(principal.limits, id)) {
      return new NotFound({ message: `no model "${id.slice(0, 100)}"; GET /v1/models lists them` });
    }
    return deps.json(200, modelObjectOf(id, deps.startedAtSeconds), headers);
  };

  /** One path, its methods, and a 405 (with `Allow`) for any other method. */
  const path = (pattern: string, routes: Readonly<Record<string, readonly [Route, HttpRoute]>>) => {
    const guarded = new Map(Object.entries(routes).map(([method, [route, slot]]) => [method, deps.guard(route, slot)]));
    const allow = Object.keys(routes);
    const wrongMethod = deps.guard(
      async (event) =>
        new MethodNotAllowed({
          message: `${event.req.method} is not allowed on ${pattern.replace(':id', '{id}')}; use ${allow.join(' or ')}`,
          allow,
        }),
      HttpRoute.other,
    );
    app.all(pattern, (event) => (guarded.get(event.req.method) ?? wrongMethod)(event));
  };
  path('/v1/models', { GET: [listModels, HttpRoute.models] });
  path('/v1/models/:id', { GET: [retrieveModel, HttpRoute.models] });
  path('/v1/responses', { POST: [create, HttpRoute.responsesCreate] });
  path('/v1/responses/:id', { GET: [retrieve, HttpRoute.responsesRetrieve] });
  path('/v1/responses/:id/cancel', { POST: [cancel, HttpRoute.responsesCancel] });
  path('/v1/chat/completions', { POST: [chatCompletionsRoute({ ...deps, passThroughOf }), HttpRoute.chatCompletions] });
  if (deps.files !== undefined && deps.batches !== undefined) {
    const batch = batchRoutes({ ...deps, files: deps.files, batches: deps.batches, pathId: pathIdOf });
    path('/v1/files', { POST: [batch.uploadFile, HttpRoute.files], GET: [batch.listFiles, HttpRoute.files] });
    path('/v1/files/:id', { GET: [batch.retrieveFile, HttpRoute.files], DELETE: [batch.deleteFile, HttpRoute.files] });
    path('/v1/files/:id/content', { GET: [batch.fileContent, HttpRoute.files] });
    path('/v1/batches', { POST: [batch.createBatch, HttpRoute.batches], GET: [batch.listBatches, HttpRoute.batches] });
    path('/v1/batches/:id', { GET: [batch.retrieveBatch, HttpRoute.batches] });
    path('/v1/batches/:id/cancel', { POST: [batch.cancelBatch, HttpRoute.batches] });
  }
  // Any other path under the face's prefixes is unknown, answered in OpenAI's shape too (SDKs read only that).
  const unknownPath = deps.guard(async (event) => unknownPathError(event.url.pathname), HttpRoute.other);
  for (const prefix of openAiPrefixes) app.all(`${prefix}/**`, unknownPath);
};
