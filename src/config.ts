import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';

export {
  defaultMaxAnswerBytes,
  type ModelConfig,
  maxAnswerBytesOf,
  modelSchema,
  type UpstreamConfig,
  upstreamsOf,
} from './modelConfig.js';

import { fileSchema, isPostgresUrl, postgresUrlProblem } from './configFile.js';
import { configErrorMap, describeConfigIssues, fieldPath } from './configIssues.js';
import {
  defaultPlans,
  fallbackPlan,
  type PlanLimits,
  type PlanName,
  type PlanTable,
  planNames,
} from './domain/plans.js';
import { type ModelConfig, normalizeModel } from './modelConfig.js';

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
