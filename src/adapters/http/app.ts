import { H3, type H3Event } from 'h3';
import type { Logger } from 'pino';
import type { AuthShape } from '../../app/Auth.js';
import type { AdminAccounts } from '../../app/adminAccounts.js';
import type { BatchesShape } from '../../app/batches/Batches.js';
import type { FilesShape } from '../../app/batches/Files.js';
import type { LiveOutputShape } from '../../app/LiveOutput.js';
import { HttpRoute } from '../../app/Metrics.js';
import type { RateLimiterShape } from '../../app/RateLimiter.js';
import type { RequestsShape } from '../../app/Requests.js';
import type { UpstreamSeen } from '../../app/upstreamStates.js';
import { NotFound } from '../../domain/errors.js';
import type { JsonBounds } from '../../domain/jsonBounds.js';
import type { ReadModel } from '../../ports/Store.js';
import { maxAdminBodyBytes } from './admin/adminAnswers.js';
import type { AdminGuard } from './admin/adminGuard.js';
import { mountAdmin } from './admin/routes.js';
import { createAdmit } from './admit.js';
import { mountAi } from './ai/routes.js';
import { createCors } from './cors.js';
import { type DashboardDeps, mountDashboard } from './dashboard/routes.js';
import { openAiFace } from './faces.js';
import { createGuard } from './guard.js';
import { h3ErrorAnswer } from './h3Errors.js';
import { json } from './jsonAnswer.js';
import { readJsonBody } from './jsonBody.js';
import { type MetricsRouteDeps, mountMetrics } from './metricsRoute.js';
import { type FaceModel, mountOpenAi, unknownPathError } from './openai/routes.js';
import { serveOpenApi } from './openapi.js';
import type { OpenCallsShape } from './openCalls.js';
import { mountProbes } from './probes.js';
import type { HeaderBag } from './route.js';
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
  readonly metrics?: MetricsRouteDeps;
  /** The configured models (ids, timeouts, fields passed through): with them the OpenAI-compatible face is served. */
  readonly models?: readonly FaceModel[];
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
  /** The admin API (`/v1/admin/*`, contract 21): its accounts and keys, and the admin key's guard (adminGuard.ts). */
  readonly admin?: {
    readonly accounts: AdminAccounts;
    readonly guard: AdminGuard;
    /** What the usage route reads (admin/usageRoute.ts). */
    readonly reads: Pick<ReadModel, 'usageRows'>;
  };
};

/**
 * The HTTP adapter: every face mounted on one h3 app, each route behind the same guard (guard.ts) and the same front
 * of auth and rate limit (admit.ts): airs's own `/v1/ai` (ai/routes.ts), the OpenAI-compatible face (openai/), the
 * dashboard, the OpenAPI document, the probes and the metrics; anything else a 404 in its face's shape.
 */
export const createHttpApp = (deps: HttpDeps): H3 => {
  const admit = createAdmit(deps);
  const readBody = (event: H3Event) => readJsonBody(event, deps.maxBodyBytes, deps.jsonBounds);
  // Without allowed origins there is no CORS at all: the hot path does not even read the Origin header.
  const cors = (deps.corsOrigins ?? []).length === 0 ? undefined : createCors(deps.corsOrigins ?? []);
  const guard = createGuard({
    log: deps.log,
    accepting: deps.accepting,
    traffic: deps.traffic ?? createTraffic(),
    // Counting a call is a few array writes (Metrics.ts); without metrics, a function that does nothing.
    count: deps.metrics?.metrics.http ?? (() => {}),
    cors,
  });

  /** CORS headers for an answer made outside the routes. */
  const corsHeaders = (event: H3Event): HeaderBag => {
    const headers: HeaderBag = {};
    cors?.answerHeaders(event.url.pathname, event.req.headers.get('origin'), headers);
    return headers;
  };

  const app = new H3({
    // h3 would write an unhandled error's stack to stderr as plain text, outside the JSON log: it is logged there.
    silent: true,
    // h3 answers some requests itself (a malformed path, say): give those the contract's shape too.
    onError: h3ErrorAnswer(deps.log, corsHeaders),
  });

  mountAi(app, {
    requests: deps.requests,
    admit,
    guard,
    readJsonBody: readBody,
    pollIntervalSeconds: deps.pollIntervalSeconds,
    openCalls: deps.openCalls,
    maxPollWaitSeconds: deps.maxPollWaitSeconds,
    stopping: deps.stopping,
  });
  const { models } = deps;
  if (models !== undefined)
    mountOpenAi(app, {
      requests: deps.requests,
      // Read at each call: a reload changes the models (deps.models is then a getter over the live config).
      get models() {
        return deps.models ?? models;
      },
      admit,
      readJsonBody: readBody,
      guard: (route, slot) => guard(route, slot, openAiFace),
      json,
      startedAtSeconds: Math.floor(Date.now() / 1000),
      live: deps.live,
      accepting: deps.accepting,
      keepAliveMs: deps.streamKeepAliveMs ?? 15_000,
      openCalls: deps.openCalls,
      files: deps.files,
      batches: deps.batches,
    });
  if (deps.admin !== undefined)
    mountAdmin(app, {
      accounts: deps.admin.accounts,
      guard,
      adminGuard: deps.admin.guard,
      reads: deps.admin.reads,
      readJsonBody: (event) => readJsonBody(event, Math.min(maxAdminBodyBytes, deps.maxBodyBytes), deps.jsonBounds),
    });
  if (deps.dashboard !== undefined) mountDashboard(app, deps.dashboard);
  app.get('/v1/openapi.json', (event) => serveOpenApi(corsHeaders(event)));
  if (deps.readiness !== undefined)
    mountProbes(app, { accepting: deps.accepting, problem: deps.readiness, upstreams: deps.upstreams });
  if (deps.metrics !== undefined) mountMetrics(app, deps.metrics);
  app.all(
    '/**',
    guard(
      async (event) =>
        event.url.pathname.startsWith('/v1/')
          ? unknownPathError(event.url.pathname)
          : new NotFound({ message: `no such path: ${event.url.pathname.slice(0, 200)}` }),
      HttpRoute.other,
    ),
  );
  return app;
};
