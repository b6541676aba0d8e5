import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';

export {
  defaultMaxAnswerBytes,
  type ModelConfig,
  maxAnswerBytesOf,
  modelSchema,
  type UpstreamConfig,
  upstreamsOf,
} from './modelConfig.js';

import { configErrorMap, describeConfigIssues, fieldPath } from './configIssues.js';
import {
  defaultPlans,
  fallbackPlan,
  type PlanLimits,
  type PlanName,
  type PlanTable,
  planNamePattern,
  planNames,
} from './domain/plans.js';
import { serviceTiers } from './domain/serviceTier.js';
import { type ModelConfig, modelSchema, modelsChecked, normalizeModel } from './modelConfig.js';

const positiveInt = z.number().int().positive();

/** A browser origin as browsers send it (`https://app.example.com`, `http://localhost:3000`), or `*`. */
const corsOrigin = z
  .string()
  .max(2_048)
  .refine((value) => {
    if (value === '*') return true;
    try {
      const url = new URL(value);
      return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === value;
    } catch {
      return false;
    }
  }, 'expected an origin such as https://app.example.com (scheme, host and port only, lower case, no trailing slash), or *');

/** A plan's limits as the config file (and an account's own limits) give them: any of them, each optional. */
export const planLimitFields = {
  maxKeys: positiveInt.nullable().optional(),
  submitsPerMinute: positiveInt.optional(),
  pollsPerMinute: positiveInt.optional(),
  maxQueued: positiveInt.optional(),
  maxOpenCalls: positiveInt.max(1_000_000).optional(),
  maxProcessing: positiveInt.nullable().optional(),
  maxBatchesInProgress: positiveInt.max(1_000_000).optional(),
  maxFileStorageBytes: positiveInt.optional(),
  maxFiles: positiveInt.max(100_000_000).optional(),
  maxConcurrentUploads: positiveInt.max(10_000).optional(),
  maxWebhookEndpoints: positiveInt.max(10_000).optional(),
  tokensPerMinute: positiveInt.nullable().optional(),
  tokensPerDay: positiveInt.nullable().optional(),
  tokensPerMonth: positiveInt.nullable().optional(),
  serviceTiers: z
    .array(z.enum(serviceTiers))
    .min(1)
    .max(serviceTiers.length)
    .refine((tiers) => new Set(tiers).size === tiers.length, 'each tier once')
    .optional(),
  defaultServiceTier: z.enum(serviceTiers).optional(),
};
const planOverride = z.strictObject(planLimitFields);
/** The most plans the config may define besides the four built-in ones. */
const maxCustomPlans = 1_000;

/** A URL the PostgreSQL store takes (`postgres://` or `postgresql://`, as libpq and every client read it). */
export const isPostgresUrl = (value: string): boolean => {
  if (!/^postgres(ql)?:\/\//.test(value)) return false;
  try {
    new URL(value);
    return true;
  } catch {
    return false;
  }
};
const postgresUrlProblem =
  'must be a postgres:// (or postgresql://) URL, e.g. postgres://airs:secret@db.internal:5432/airs';

export const fileSchema = z.strictObject({
  port: z.number().int().min(0).max(65_535).optional(),
  host: z.string().min(1).optional(),
  dataDir: z.string().min(1).optional(),
  // At most ten years: every time airs derives from it stays a valid date (2^53 seconds passed and broke replay).
  requestTtlSeconds: positiveInt.max(315_360_000, 'must be at most 315360000 (ten years)').optional(),
  maxPromptChars: positiveInt.optional(),
  /** The prompt's size in UTF-8 (a conversation: the text stored for it); the smaller of the two limits applies. */
  maxPromptBytes: positiveInt.optional(),
  maxBodyBytes: positiveInt.optional(),
  /** JSON bodies are refused beyond these, before they are parsed (contract 15). */
  maxJsonDepth: positiveInt.max(100_000).optional(),
  maxJsonValues: positiveInt.optional(),
  pollIntervalSeconds: positiveInt.optional(),
  // Plans of any name (contract 21): the four built-in ones are always there; others start from `free`'s limits.
  plans: z
    .record(z.string(), planOverride)
    .superRefine((plans, context) => {
      for (const name of Object.keys(plans))
        if (!planNamePattern.test(name))
          context.addIssue({
            code: 'custom',
            path: [name],
            message: 'a plan name is 1 to 40 lower-case letters, digits and dashes',
          });
    })
    .refine(
      (plans) => Object.keys(plans).length <= maxCustomPlans + planNames.length,
      `at most ${maxCustomPlans} plans besides the four built-in ones`,
    )
    .optional(),
  models: z
    .array(modelSchema)
    .min(1)
    .refine((models) => new Set(models.map((m) => m.id)).size === models.length, 'model ids must be unique')
    .superRefine(modelsChecked)
    .optional(),
  processing: z
    .strictObject({
      /** Workers of one process; by default what the models can take (`defaultWorkers`). */
      concurrency: positiveInt.max(10_000).optional(),
      maxAttempts: positiveInt.max(100).optional(),
      /** How long a started request stays with its worker's process unless renewed; a dead process's work is taken
       * over by another when it lapses. */
      leaseSeconds: positiveInt.max(3_600).optional(),
      /** The most of a model's workers one account holds while another account has work of that model due. */
      maxAccountShare: z.number().gt(0).max(1).optional(),
      /** Submits a process queues beyond what its workers have taken, at most, before it answers `503` (admission.ts). */
      maxBacklog: positiveInt.max(100_000_000).optional(),
      /** How long a `default` request waits before it is started as `priority` would be (contract 20). */
      promoteAfterSeconds: positiveInt.max(86_400).optional(),
    })
    .optional(),
  /** OpenAI's Batch API (contract 16). */
  batches: z
    .strictObject({
      /** What a `completion_window` of "24h" lasts, in seconds (shorter for tests). */
      windowSeconds: positiveInt.max(315_360_000).optional(),
      /** An uploaded file's size, at most. */
      maxFileBytes: positiveInt.optional(),
      /** Lines of one batch's input file, at most. */
      maxLines: positiveInt.max(10_000_000).optional(),
      /** The share of each model's workers batches' lines always get, even while interactive requests wait. */
      minShare: z.number().min(0).max(1).optional(),
      /** How long output and error files live unless the batch asks otherwise. */
      outputExpiresAfterSeconds: positiveInt.max(315_360_000).optional(),
      /** Batches one server process works on at once (validating, queueing, cancelling, finalizing), at most. */
      maxConcurrentWork: positiveInt.max(10_000).optional(),
      /** Batches' lines handed to the committer and not durable yet, per process, at most (app/batches/lineBudget.ts). */
      maxLinesInFlight: positiveInt.max(100_000).optional(),
      /** Bytes of those lines (their text as the committer counts it), per process, at most. */
      maxLineBytesInFlight: positiveInt.max(1024 * 1024 * 1024).optional(),
      /** The share of those two bounds one account's lines may hold. */
      maxAccountShareInFlight: z.number().gt(0).max(1).optional(),
      /** A batch's lines queued and not ended, at most: more are queued as they end (app/batches/queueLines.ts). */
      maxLinesAhead: positiveInt.max(100_000).optional(),
    })
    .optional(),
  /** Where the store is when not LMDB under `dataDir`: a PostgreSQL database shared by every node (contract 14). */
  store: z
    .strictObject({
      url: z.string().refine(isPostgresUrl, postgresUrlProblem).optional(),
    })
    .optional(),
  storage: z
    .strictObject({
      /** Submits are refused (503) while the data directory's disk has less free space than this; 0 turns it off. */
      minFreeMegabytes: z.number().int().min(0).max(1_048_576).optional(),
    })
    .optional(),
  /** How long a stopping server keeps answering (503 to new calls) while calls and model work in flight finish. */
  shutdownGraceSeconds: z.number().int().min(0).max(3_600).optional(),
  /** How long a stopping server keeps its port open answering 503 (readiness included) before it drains and closes,
   * so that a load balancer sees it not ready and stops sending before connections are refused. */
  shutdownDelaySeconds: z.number().int().min(0).max(3_600).optional(),
  /** Server processes `airs serve` runs on this machine, sharing the port and the store. */
  processes: positiveInt.max(256).optional(),
  /** How long a connection may take and how many there may be (decisions.md, HTTP serving). */
  http: z
    .strictObject({
      headersTimeoutSeconds: positiveInt.max(3_600).optional(),
      requestTimeoutSeconds: positiveInt.max(3_600).optional(),
      keepAliveTimeoutSeconds: positiveInt.max(3_600).optional(),
      maxConnections: positiveInt.max(1_000_000).optional(),
      /** The part of `maxConnections` that long-lived calls (streams, long polls) may hold together. */
      maxLongCallsShare: z.number().gt(0).max(1).optional(),
      /** The longest `Prefer: wait=N` a poll is held for (RFC 7240); 0 answers every poll at once. */
      maxPollWaitSeconds: z.number().int().min(0).max(60).optional(),
    })
    .optional(),
  dashboard: z
    .strictObject({
      /** Signups per client address in an hour; beyond, a 429 page. 0 turns the throttle off. */
      signupsPerHour: z.number().int().min(0).max(1_000_000).optional(),
      /** Passwords hashed at once (scrypt, on libuv's thread pool, which the store's commits need too). */
      hashingConcurrency: positiveInt.max(16).optional(),
      /** Logins and signups waiting for a hashing slot; beyond, a 429 page. */
      hashingQueue: z.number().int().min(0).max(1_000).optional(),
    })
    .optional(),
  /** Webhooks (issue 30): where they may be sent, how long a delivery is tried, how many are sent at once. */
  webhooks: z
    .strictObject({
      /** Endpoints may be `http://` URLs (default: only `https://`). */
      allowHttp: z.boolean().optional(),
      /** Endpoints may be (and resolve to) loopback, private, link-local or metadata addresses (default: refused). */
      allowPrivateNetworks: z.boolean().optional(),
      /** How long a delivery is attempted (with backoff) before it gives up. */
      retentionHours: positiveInt.max(8_760).optional(),
      /** Deliveries one process sends at once, in all, to one endpoint, and to one account's endpoints. */
      maxInFlight: positiveInt.max(10_000).optional(),
      maxInFlightPerEndpoint: positiveInt.max(1_000).optional(),
      maxInFlightPerAccount: positiveInt.max(10_000).optional(),
    })
    .optional(),
  cors: z
    .strictObject({
      /** Browser origins allowed to call `/v1/*` (contract 13); `*` allows any. Credentials are never allowed. */
      allowedOrigins: z.array(corsOrigin).max(1_000).optional(),
    })
    .optional(),
  metrics: z
    .strictObject({
      /** When set, `GET /metrics` requires `Authorization: Bearer <token>`. */
      token: z
        .string()
        .min(16, 'must be at least 16 characters')
        .regex(/^\S+$/, 'must not contain white space')
        .optional(),
    })
    .optional(),
});

export type Config = {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  /** A PostgreSQL database as the store (then `dataDir` is not used), and where its URL came from. */
  readonly store: { readonly url?: string; readonly urlFrom?: string };
  readonly requestTtlSeconds: number;
  readonly maxPromptChars: number;
  readonly maxPromptBytes: number;
  readonly maxBodyBytes: number;
  readonly maxJsonDepth: number;
  readonly maxJsonValues: number;
  readonly pollIntervalSeconds: number;
  readonly plans: PlanTable;
  readonly models: readonly ModelConfig[];
  readonly processing: {
    readonly concurrency: number;
    readonly maxAttempts: number;
    readonly leaseSeconds: number;
    readonly maxAccountShare: number;
    readonly promoteAfterSeconds: number;
    readonly maxBacklog: number;
  };
  readonly storage: { readonly minFreeBytes: number };
  readonly batches: {
    readonly windowSeconds: number;
    readonly maxFileBytes: number;
    readonly maxLines: number;
    readonly minShare: number;
    readonly outputExpiresAfterSeconds: number;
    readonly maxConcurrentWork: number;
    readonly maxLinesInFlight: number;
    readonly maxLineBytesInFlight: number;
    readonly maxAccountShareInFlight: number;
    readonly maxLinesAhead: number;
  };
  readonly shutdownGraceSeconds: number;
  /** How long a stopping server answers 503 on an open port before the drain (0: drains at once). */
  readonly shutdownDelaySeconds: number;
  /** Server processes `airs serve` runs (one primary that forks them when more than 1). */
  readonly processes: number;
  /** Connection bounds of the HTTP server (listen.ts). */
  readonly http: HttpLimits;
  /** The dashboard's limits against unauthenticated floods (product contract 15). */
  readonly dashboard: {
    readonly signupsPerHour: number;
    readonly hashingConcurrency: number;
    readonly hashingQueue: number;
  };
  /** `GET /metrics`: without a token it is open (bind to a private interface); with one it asks for it. */
  readonly metrics: { readonly token?: string };
  readonly webhooks: WebhookSettings;
  /** Browser origins allowed to call `/v1/*`; empty: no CORS header is sent. */
  readonly cors: { readonly allowedOrigins: readonly string[] };
  /** Where the config came from, for the start-up line. */
  readonly source: string;
  /** Where `dataDir` came from (`--data-dir`, `AIRS_DATA_DIR`, the file, the default), for messages naming it. */
  readonly dataDirFrom: string;
};

/** How long a delivery is attempted before it gives up, in ms (`webhooks.retentionHours`). */
export const webhookRetentionMs = (webhooks: Pick<WebhookSettings, 'retentionHours'>): number =>
  webhooks.retentionHours * 3_600_000;

export type WebhookSettings = {
  readonly allowHttp: boolean;
  readonly allowPrivateNetworks: boolean;
  /** How long a delivery is attempted before it gives up (webhookRetentionMs: in ms). */
  readonly retentionHours: number;
  readonly maxInFlight: number;
  readonly maxInFlightPerEndpoint: number;
  readonly maxInFlightPerAccount: number;
};

export type HttpLimits = {
  /** A connection has this long from its start (or from its previous answer) to send a request's headers. */
  readonly headersTimeoutSeconds: number;
  /** ... and this long to send the whole request, headers and body. */
  readonly requestTimeoutSeconds: number;
  /** An idle kept-alive connection is closed after this long. */
  readonly keepAliveTimeoutSeconds: number;
  /** Connections held at once; more are closed as soon as they are accepted. */
  readonly maxConnections: number;
  /** Long-lived calls (streams, waiting creates, long polls) held at once, all accounts together, at most this part of
   * `maxConnections`; beyond, they answer `503`, so that short calls and the probes always find a connection. */
  readonly maxLongCallsShare: number;
  /** A poll with `Prefer: wait=N` is held until its request is final or `min(N, this)` seconds passed (0: never held). */
  readonly maxPollWaitSeconds: number;
};

/** What the command line gives (`--config`, `--data-dir`, `--port`, `--host`): it wins over the environment. */
export type ConfigOverrides = {
  readonly configFile?: string;
  readonly dataDir?: string;
  readonly databaseUrl?: string;
  readonly port?: number;
  readonly host?: string;
  readonly processes?: number;
};

export const defaultModels: readonly ModelConfig[] = [
  { id: 'echo', provider: 'echo', delayMs: 0, timeoutMs: 60_000 },
  { id: 'echo-slow', provider: 'echo', delayMs: 5_000, timeoutMs: 60_000 },
];

/** What a model without `maxConcurrency` counts for in the default worker count: the old fixed default. */
export const workersPerUnboundedModel = 16;
/** The most workers a process gets by default, however many the models could take. */
export const maxDefaultWorkers = 1_024;

/**
 * The default of `processing.concurrency`: what the models can take, so each model's `maxConcurrency` is honoured
 * (a vLLM server that batches 256 requests gets 256 workers, not 16). The sum of the models' `maxConcurrency`,
 * `workersPerUnboundedModel` for a model without one, at most `maxDefaultWorkers`.
 */
export const defaultWorkers = (models: readonly ModelConfig[]): number =>
  Math.min(
    maxDefaultWorkers,
    models.reduce((sum, model) => sum + (model.maxConcurrency ?? workersPerUnboundedModel), 0),
  );

/** A config that cannot be used; the message names the file and the field. */
export class ConfigError extends Error {}

const envPort = (value: string | undefined): number | undefined => {
  if (value === undefined || value === '') return undefined;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65_535)
    throw new ConfigError(`PORT: expected an integer from 0 to 65535, got "${value}"`);
  return port;
};

const storeOf = (overrides: ConfigOverrides, env: NodeJS.ProcessEnv, fileUrl: string | undefined, source: string) => {
  const [url, urlFrom] = overrides.databaseUrl
    ? [overrides.databaseUrl, '--database-url']
    : env.AIRS_DATABASE_URL
      ? [env.AIRS_DATABASE_URL, 'AIRS_DATABASE_URL']
      : fileUrl
        ? [fileUrl, `store.url in ${source}`]
        : [undefined, undefined];
  if (url === undefined) return {};
  if (!isPostgresUrl(url)) throw new ConfigError(`${urlFrom}: ${postgresUrlProblem}`);
  return { url, urlFrom };
};

const readFile = (path: string): unknown => {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`config file ${path}: cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`config file ${path}: not valid JSON (${(error as Error).message})`);
  }
};

/** The four built-in plans (their defaults, overridden by the file), then the file's own plans, each starting from
 * the resulting `free` plan's limits. */
const mergePlans = (overrides: Readonly<Record<PlanName, Partial<PlanLimits>>> | undefined): PlanTable => {
  const plans: Record<string, PlanLimits> = Object.fromEntries(
    planNames.map((name) => [name, { ...defaultPlans[name], ...stripUndefined(overrides?.[name] ?? {}) }]),
  );
  const base = plans[fallbackPlan] as PlanLimits;
  for (const [name, limits] of Object.entries(overrides ?? {}))
    if (!Object.hasOwn(plans, name)) plans[name] = { ...base, ...stripUndefined(limits) };
  return plans as PlanTable;
};

const stripUndefined = <T extends object>(value: T): Partial<T> =>
  Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;

/**
 * The configuration in force: `overrides.configFile`, else `$AIRS_CONFIG`, else `./airs.config.json` if present,
 * else built-in defaults; then `PORT`, `HOST` and `AIRS_DATA_DIR` from the environment win, and `overrides` over
 * them. Throws ConfigError naming the bad field.
 */
export const loadConfig = (
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
  overrides: ConfigOverrides = {},
): Config => {
  const explicit = overrides.configFile || env.AIRS_CONFIG;
  const implicit = resolve(cwd, 'airs.config.json');
  const path = explicit ? resolve(cwd, explicit) : existsSync(implicit) ? implicit : undefined;
  const raw = path === undefined ? {} : readFile(path);
  const source = path ?? 'built-in defaults';
  const parsed = fileSchema.safeParse(raw, { error: configErrorMap });
  if (!parsed.success)
    throw new ConfigError(describeConfigIssues(`config file ${source}`, parsed.error.issues, raw, fileSchema));
  const file = parsed.data;
  const models = file.models?.map(normalizeModel) ?? defaultModels;
  const http = {
    headersTimeoutSeconds: file.http?.headersTimeoutSeconds ?? 20,
    requestTimeoutSeconds: file.http?.requestTimeoutSeconds ?? 60,
    keepAliveTimeoutSeconds: file.http?.keepAliveTimeoutSeconds ?? 10,
    maxConnections: file.http?.maxConnections ?? 4_096,
    maxLongCallsShare: file.http?.maxLongCallsShare ?? 0.5,
    maxPollWaitSeconds: file.http?.maxPollWaitSeconds ?? 60,
  };
  // The headers are part of the request: Node refuses a headers timeout longer than the request's.
  if (http.headersTimeoutSeconds > http.requestTimeoutSeconds)
    throw new ConfigError(
      `config file ${source}: http.headersTimeoutSeconds: must be at most http.requestTimeoutSeconds (${http.requestTimeoutSeconds})`,
    );
  return {
    port: overrides.port ?? envPort(env.PORT) ?? file.port ?? 8080,
    host: overrides.host || env.HOST || file.host || '127.0.0.1',
    dataDir: resolve(cwd, overrides.dataDir || env.AIRS_DATA_DIR || file.dataDir || './data'),
    store: storeOf(overrides, env, file.store?.url, source),
    requestTtlSeconds: file.requestTtlSeconds ?? 86_400,
    maxPromptChars: file.maxPromptChars ?? 1_000_000,
    maxPromptBytes: file.maxPromptBytes ?? 1024 * 1024,
    maxBodyBytes: file.maxBodyBytes ?? 4 * 1024 * 1024,
    maxJsonDepth: file.maxJsonDepth ?? 64,
    maxJsonValues: file.maxJsonValues ?? 100_000,
    pollIntervalSeconds: file.pollIntervalSeconds ?? 5,
    plans: mergePlans(file.plans as Readonly<Record<PlanName, Partial<PlanLimits>>> | undefined),
    models,
    processing: {
      concurrency: file.processing?.concurrency ?? defaultWorkers(models),
      maxAttempts: file.processing?.maxAttempts ?? 3,
      leaseSeconds: file.processing?.leaseSeconds ?? 30,
      maxAccountShare: file.processing?.maxAccountShare ?? 0.75,
      maxBacklog: file.processing?.maxBacklog ?? 10_000,
      promoteAfterSeconds: file.processing?.promoteAfterSeconds ?? 60,
    },
    storage: { minFreeBytes: (file.storage?.minFreeMegabytes ?? 64) * 1024 * 1024 },
    batches: {
      windowSeconds: file.batches?.windowSeconds ?? 86_400,
      maxFileBytes: file.batches?.maxFileBytes ?? 200 * 1024 * 1024,
      maxLines: file.batches?.maxLines ?? 50_000,
      minShare: file.batches?.minShare ?? 0.1,
      outputExpiresAfterSeconds: file.batches?.outputExpiresAfterSeconds ?? 30 * 86_400,
      maxConcurrentWork: file.batches?.maxConcurrentWork ?? 8,
      maxLinesInFlight: file.batches?.maxLinesInFlight ?? 2_000,
      maxLineBytesInFlight: file.batches?.maxLineBytesInFlight ?? 16 * 1024 * 1024,
      maxAccountShareInFlight: file.batches?.maxAccountShareInFlight ?? 0.5,
      maxLinesAhead: file.batches?.maxLinesAhead ?? 256,
    },
    shutdownGraceSeconds: file.shutdownGraceSeconds ?? 10,
    shutdownDelaySeconds: file.shutdownDelaySeconds ?? 2,
    processes: overrides.processes ?? file.processes ?? 1,
    http,
    dashboard: {
      signupsPerHour: file.dashboard?.signupsPerHour ?? 5,
      hashingConcurrency: file.dashboard?.hashingConcurrency ?? 2,
      hashingQueue: file.dashboard?.hashingQueue ?? 4,
    },
    metrics: file.metrics?.token === undefined ? {} : { token: file.metrics.token },
    webhooks: {
      allowHttp: file.webhooks?.allowHttp ?? false,
      allowPrivateNetworks: file.webhooks?.allowPrivateNetworks ?? false,
      retentionHours: file.webhooks?.retentionHours ?? 72,
      maxInFlight: file.webhooks?.maxInFlight ?? 64,
      maxInFlightPerEndpoint: file.webhooks?.maxInFlightPerEndpoint ?? 4,
      maxInFlightPerAccount: file.webhooks?.maxInFlightPerAccount ?? 8,
    },
    cors: { allowedOrigins: file.cors?.allowedOrigins ?? [] },
    source,
    dataDirFrom: overrides.dataDir
      ? '--data-dir'
      : env.AIRS_DATA_DIR
        ? 'AIRS_DATA_DIR'
        : file.dataDir
          ? `dataDir in ${source}`
          : 'the default ./data',
  };
};

/**
 * The upstream keys the models name must be in the environment before the server starts. Only `serve` checks:
 * management commands read the same file but never call a model.
 */
export const checkModelSecrets = (config: Config, env: NodeJS.ProcessEnv = process.env): void => {
  config.models.forEach((model, index) => {
    if (model.provider !== 'openai') return;
    const missing = (name: string | undefined, path: (string | number)[]) => {
      if (name === undefined || env[name]) return;
      throw new ConfigError(
        `config file ${config.source}: ${fieldPath(['models', index, ...path], config)}: environment variable ${name} is not set`,
      );
    };
    missing(model.apiKeyEnv, ['apiKeyEnv']);
    model.upstreams?.forEach((upstream, at) => {
      missing(upstream.apiKeyEnv, ['upstreams', at, 'apiKeyEnv']);
    });
  });
};

/** Defaults for tests and embedding: what `loadConfig` gives with no file and no environment. */
export const defaultConfig = (overrides: Partial<Config> = {}): Config => ({
  ...loadConfig({}, '/nonexistent-airs-dir'),
  ...overrides,
});
