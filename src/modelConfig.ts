import { z } from 'zod';

/**
 * The `models` entries of the config file (contract 7 and 19): `echo`, and `openai` with one upstream (`baseUrl`) or
 * several (`upstreams`), its fallback models and its health settings. In a file of its own: config.ts reads the rest.
 */

const positiveInt = z.number().int().positive();

/** `models[].maxAnswerBytes` unless the model says otherwise (4 MiB; docs/decisions.md, "Issue 40: an upstream's answer is bounded"). */
export const defaultMaxAnswerBytes = 4 * 1024 * 1024;
/**
 * The most bytes of answer one call may produce (its text, and its tool calls' names and arguments, in UTF-8), for
 * every provider; beyond it the attempt fails as the upstream's. At most 64 MiB: an answer is one string in memory, and
 * JSON-escaped into a poll's body or a batch's output line it may take six bytes per byte, within V8's longest string.
 */
const maxAnswerBytes = positiveInt.max(64 * 1024 * 1024).default(defaultMaxAnswerBytes);
/** A model's id is shown in pages and the operator's terminal: no control characters (product contract 15). */
const modelId = z
  .string()
  .min(1)
  .regex(/^\P{Cc}*$/u, 'must not contain control characters');
const httpUrl = z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' });
const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name');

/** What an upstream without `maxConcurrency` of its own holds, among several (contract 19). */
export const defaultUpstreamPlaces = 16;
/** The most upstreams one model lists: the claim weighs each of them for every request it starts. */
export const maxUpstreams = 64;
/** The most fallback models one model names. */
export const maxFallbacks = 8;

const echoModel = z.strictObject({
  id: modelId,
  provider: z.literal('echo'),
  /** Simulated generation time. */
  delayMs: z.number().int().min(0).default(0),
  /** One attempt is abandoned after this long. */
  timeoutMs: positiveInt.default(60_000),
  /** Requests of this model processed at once, at most (within `processing.concurrency`). */
  maxConcurrency: positiveInt.optional(),
  maxAnswerBytes,
});

/** One inference server of a model; what it leaves out comes from the model. */
const upstreamEntry = z.strictObject({
  /** What logs, metrics and the CLI call it (default: its position, `0`, `1`, …); kept in the log, so short. */
  name: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9._:-]+$/, 'expected letters, digits and . _ : - only')
    .optional(),
  baseUrl: httpUrl,
  apiKeyEnv: envName.optional(),
  upstreamModel: z.string().min(1).optional(),
  /** Calls it takes at once, across every process and node. */
  maxConcurrency: positiveInt.optional(),
  /** Its share of the prefix-affine requests and of the load, against the others (default 1). */
  weight: z.number().positive().max(1_000).optional(),
  timeoutMs: positiveInt.optional(),
});

const openAiModel = z.strictObject({
  id: modelId,
  provider: z.literal('openai'),
  /** The API root as OpenAI clients take it, e.g. `http://127.0.0.1:11434/v1` (one upstream; else `upstreams`). */
  baseUrl: httpUrl.optional(),
  upstreams: z.array(upstreamEntry).min(1).max(maxUpstreams).optional(),
  /** The name of the environment variable that holds the upstream key (the key itself is never in the file). */
  apiKeyEnv: envName.optional(),
  upstreamModel: z.string().min(1).optional(),
  timeoutMs: positiveInt.default(120_000),
  maxConcurrency: positiveInt.optional(),
  /** Retries of upstream 429/5xx inside one call (the SDK's backoff, honouring Retry-After); with several upstreams
   * failover takes their place (docs/decisions.md, "Issue 41: the SDK's retries"). */
  maxRetries: z.number().int().min(0).max(10).default(2),
  maxAnswerBytes,
  /** Models that serve this one's requests while none of its upstreams is in service. */
  fallbacks: z.array(modelId).min(1).max(maxFallbacks).optional(),
  /** A request that waited this long while its upstreams are full may run on a fallback. */
  spillAfterSeconds: positiveInt.max(86_400).optional(),
  /** Failures in a row that are an upstream's that take it out of service. */
  upstreamFailures: positiveInt.max(1_000).default(3),
});

export const modelSchema = z.discriminatedUnion('provider', [echoModel, openAiModel], {
  error: (issue) => {
    if (issue.code !== 'invalid_union') return undefined;
    const given = typeof issue.input === 'object' && issue.input !== null && 'provider' in issue.input;
    return `${given ? 'unknown provider' : 'is required'} (this version supports: echo, openai)`;
  },
});
/** Each provider's entry, its defaulted fields optional (code builds models too: tests, the built-in ones). */
type Built<M> = M extends { provider: 'openai' }
  ? Omit<M, 'maxAnswerBytes' | 'upstreams' | 'upstreamFailures' | 'maxRetries'> & {
      readonly maxAnswerBytes?: number | undefined;
      readonly upstreams?: readonly UpstreamEntry[] | undefined;
      readonly upstreamFailures?: number | undefined;
      readonly maxRetries?: number | undefined;
    }
  : M extends unknown
    ? Omit<M, 'maxAnswerBytes'> & { readonly maxAnswerBytes?: number | undefined }
    : never;
type UpstreamEntry = z.infer<typeof upstreamEntry>;
/**
 * A model as airs runs it: the file's entry with its defaults. `maxAnswerBytes` may be left out where code builds one
 * (the built-in models, tests): `maxAnswerBytesOf` gives its default then; an `openai` model's upstreams are read
 * through `upstreamsOf`, whichever form it was given in.
 */
export type ModelConfig = Built<z.infer<typeof modelSchema>>;
export type OpenAiModelConfig = Extract<ModelConfig, { provider: 'openai' }>;

/** The most bytes of answer one call of `model` may produce. */
export const maxAnswerBytesOf = (model: ModelConfig): number => model.maxAnswerBytes ?? defaultMaxAnswerBytes;

/** One upstream of a model, every field resolved (the model's where the upstream has none). */
export type UpstreamConfig = {
  readonly name: string;
  readonly baseUrl: string;
  readonly apiKeyEnv?: string | undefined;
  readonly upstreamModel: string;
  /** Calls it takes at once, in all processes (Infinity: the one upstream of a model without a bound). */
  readonly places: number;
  readonly weight: number;
  readonly timeoutMs: number;
};

const resolved = new WeakMap<OpenAiModelConfig, readonly UpstreamConfig[]>();

/**
 * A model's upstreams, each field resolved: `upstreams` as listed, or the one `baseUrl` as the upstream named `0`.
 * One upstream without places of its own takes the model's (none: unbounded, as a one-`baseUrl` model always was);
 * among several, 16 each.
 */
export const upstreamsOf = (model: OpenAiModelConfig): readonly UpstreamConfig[] => {
  let upstreams = resolved.get(model);
  if (upstreams !== undefined) return upstreams;
  const entries: readonly UpstreamEntry[] = model.upstreams ?? [{ baseUrl: model.baseUrl ?? '' }];
  const alone = entries.length === 1;
  upstreams = entries.map((entry, index) => ({
    name: entry.name ?? String(index),
    baseUrl: entry.baseUrl,
    apiKeyEnv: entry.apiKeyEnv ?? model.apiKeyEnv,
    upstreamModel: entry.upstreamModel ?? model.upstreamModel ?? '',
    places:
      entry.maxConcurrency ?? (alone ? (model.maxConcurrency ?? Number.POSITIVE_INFINITY) : defaultUpstreamPlaces),
    weight: entry.weight ?? 1,
    timeoutMs: entry.timeoutMs ?? model.timeoutMs,
  }));
  resolved.set(model, upstreams);
  return upstreams;
};

/**
 * The model as airs runs it, once parsed: with several upstreams and no `maxConcurrency`, the model's bound is the sum
 * of its upstreams' places (16 each without).
 */
export const normalizeModel = (model: z.infer<typeof modelSchema>): ModelConfig => {
  if (model.provider !== 'openai' || model.upstreams === undefined || model.maxConcurrency !== undefined) return model;
  const sum = model.upstreams.reduce((total, entry) => total + (entry.maxConcurrency ?? defaultUpstreamPlaces), 0);
  return { ...model, maxConcurrency: sum };
};

type Models = readonly z.infer<typeof modelSchema>[];

/** What one model's entry cannot say alone: its upstreams' form and names, and fallbacks that name other models. */
export const modelsChecked = (models: Models, context: z.RefinementCtx): void => {
  const ids = new Set(models.map((model) => model.id));
  models.forEach((model, index) => {
    if (model.provider !== 'openai') return;
    const issue = (path: (string | number)[], message: string) =>
      context.addIssue({ code: 'custom', path: [index, ...path], message });
    if ((model.baseUrl === undefined) === (model.upstreams === undefined))
      issue(['baseUrl'], 'give either baseUrl (one upstream) or upstreams (one or more), not both or neither');
    const names = new Set<string>();
    (model.upstreams ?? []).forEach((entry, at) => {
      const name = entry.name ?? String(at);
      if (names.has(name)) issue(['upstreams', at, 'name'], `upstream name "${name}" is used twice in this model`);
      names.add(name);
      if (entry.upstreamModel === undefined && model.upstreamModel === undefined)
        issue(['upstreams', at, 'upstreamModel'], 'is required (here or on the model)');
    });
    if (model.upstreams === undefined && model.upstreamModel === undefined) issue(['upstreamModel'], 'is required');
    (model.fallbacks ?? []).forEach((fallback, at) => {
      if (fallback === model.id) issue(['fallbacks', at], `a model cannot be its own fallback ("${fallback}")`);
      else if (!ids.has(fallback))
        issue(['fallbacks', at], `names no configured model ("${fallback}"; the models are: ${[...ids].join(', ')})`);
    });
    if (model.spillAfterSeconds !== undefined && model.fallbacks === undefined)
      issue(['spillAfterSeconds'], 'needs fallbacks (the models a request spills over to)');
  });
};
