import { z } from 'zod';
import { planNamePattern, planNames } from './domain/plans.js';
import { serviceTiers } from './domain/serviceTier.js';
import { modelSchema, modelsChecked } from './modelConfig.js';

/**
 * The config file as written (JSON): every field optional, each with its bounds. `loadConfig` (config.ts) reads it,
 * fills in the environment, the flags and the defaults, and gives the `Config` the service runs with.
 */

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
export const postgresUrlProblem =
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
