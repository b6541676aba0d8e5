/** Submitting a request: its input and options, checked against the rules and queued in one durable write. */
import type { Config } from '../config.js';
import { isRefusal } from '../domain/commands.js';
import {
  IdempotencyKeyReused,
  InvalidRequest,
  QueueFull,
  type QuotaExceeded,
  RateLimited,
  Unavailable,
} from '../domain/errors.js';
import { queueFullMessage } from '../domain/queuedCounter.js';
import { type RequestedTier, tierServed } from '../domain/serviceTier.js';
import type { ClockShape } from '../ports/Clock.js';
import type { IdsShape } from '../ports/Ids.js';
import type { ChatMessage, GenerationParams } from '../ports/ModelProvider.js';
import type { StoreShape } from '../ports/Store.js';
import { limitsOf, type Principal } from './Auth.js';
import type { CommitterShape } from './Committer.js';
import { cancelAfterOf } from './cancelAfter.js';
import type { MetricsShape } from './Metrics.js';
import type { ModelsShape } from './Models.js';
import type { ProcessorShape } from './processing/Processor.js';
import { affinityOf } from './promptPrefix.js';
import { requestHashOf } from './requestHash.js';
import { storedInputOf } from './storedInput.js';
import { beyondModel, checkModelAndSize, parseSubmission, rulesForAccount } from './submission.js';
import { createTokenBudget } from './tokenBudget.js';

/** A submit's input once its body is understood (from `POST /v1/ai` or `POST /v1/responses`). */
export type SubmitInput = {
  readonly model: string;
  /** The prompt; for a conversation, the last user message's text (what `echo` answers). */
  readonly prompt: string;
  /** A conversation (the OpenAI face): sent to the model as messages. */
  readonly messages?: readonly ChatMessage[] | undefined;
  /** Generation parameters and tools (the OpenAI face), kept with the request and sent on every attempt. */
  readonly params?: GenerationParams | undefined;
  /** The caller's `metadata` (the OpenAI face), as the JSON text of the object: kept with the request, never sent. */
  readonly metadata?: string | undefined;
  /** The service tier it asks for (contract 20): served at it if its limits allow, else the best allowed below. */
  readonly serviceTier?: RequestedTier | undefined;
};

export type SubmitOptions = {
  /**
   * The `Idempotency-Key` header, and what identifies the call it came with (the route and its parsed body): a repeat
   * with the same key and the same fingerprint answers the first request; another fingerprint is refused.
   */
  readonly idempotency?: { readonly key: string; readonly fingerprint: unknown } | undefined;
  /**
   * Called with the new request's id before its submit is committed, so that a caller streaming it can listen to its
   * first attempt from its beginning (LiveOutput).
   */
  readonly beforeCommit?: ((reqId: string) => void) | undefined;
  /** `responses` when `POST /v1/responses` made it: kept on the request, it makes `response.*` webhooks too. */
  readonly face?: 'responses' | undefined;
  /** The `Cancel-After` header as sent (contract 20; cancelAfter.ts reads it): a bad value refuses the submit. */
  readonly cancelAfter?: string | null | undefined;
};

/**
 * A submit's answer: the request queued, and for which model; `replayed` when an earlier submit with the same
 * idempotency key made the request. Each face says it in its own words (adapters/http/ai/wire.ts for `/v1/ai`).
 */
export type Submitted = { readonly reqId: string; readonly model: string; readonly replayed: boolean };

/** What a submit answers (RequestsShape's `submit` and `submitInput`): its request queued, or why not. */
type SubmitAnswer = Promise<
  Submitted | InvalidRequest | Unavailable | IdempotencyKeyReused | RateLimited | QuotaExceeded
>;

/** What submits need of the Requests layer's services. */
export type SubmitDeps = {
  readonly config: Config;
  readonly store: StoreShape;
  readonly clock: ClockShape;
  readonly ids: IdsShape;
  readonly models: ModelsShape;
  readonly processor: ProcessorShape;
  readonly committer: CommitterShape;
  readonly metrics: MetricsShape | undefined;
};

/** `submit` and `submitInput`, built once with the layer: plain functions, as they run on every API call. */
export const createSubmits = ({ config, store, clock, ids, models, processor, committer, metrics }: SubmitDeps) => {
  const ttlMs = config.requestTtlSeconds * 1000;
  const tokenBudget = createTokenBudget({ reads: store.reads, plans: () => config.plans, now: () => clock.now() });
  const rules = {
    // Read at each use: a reload adds and removes models.
    get modelIds() {
      return models.ids();
    },
    maxPromptChars: config.maxPromptChars,
    maxPromptBytes: config.maxPromptBytes,
  };
  const rulesOf = (principal: Principal) => rulesForAccount(rules, limitsOf(config.plans, principal).allowedModels);

  /**
   * The idempotency key and the hash of the call's fingerprint, taken before anything is awaited: the fingerprint
   * holds the parsed body, which must not stay in memory while the commit is waited for.
   */
  const idempotencyOf = (options: SubmitOptions | undefined) =>
    options?.idempotency === undefined
      ? undefined
      : { key: options.idempotency.key, requestHash: requestHashOf(options.idempotency.fingerprint) };

  /** Queues an input that meets the rules, kept as `stored` (storedInput.ts). */
  const queue = async (
    principal: Principal,
    input: SubmitInput,
    stored: { readonly kind: 'chat' | undefined; readonly text: string },
    idempotency: { readonly key: string; readonly requestHash: string } | undefined,
    beforeCommit: ((reqId: string) => void) | undefined,
    face: 'responses' | undefined,
    cancelAfterMs: number | undefined,
  ): Promise<Submitted | Unavailable | IdempotencyKeyReused | RateLimited | QuotaExceeded> => {
    // The account's token limits (contract 21): read only where it has any.
    const tokenCheck = tokenBudget.check(principal);
    const tokenRefusal = tokenCheck === undefined ? undefined : await tokenCheck;
    if (tokenRefusal !== undefined) return tokenRefusal;
    const { model, prompt, messages, params } = input;
    const { text } = stored;
    const limits = limitsOf(config.plans, principal);
    const serviceTier = tierServed(input.serviceTier, limits.serviceTiers, limits.defaultServiceTier);
    const reqId = ids.requestId();
    beforeCommit?.(reqId);
    // A free worker here and nothing waiting in the store: the request is queued and started in one write (the
    // store decides), and worked on at once.
    const startNow = processor.reserve(model);
    // No worker free for it: it would wait in the queue, which takes it only while the workers keep up (admission.ts).
    if (startNow === undefined) {
      const refused = processor.admission();
      if (refused !== undefined) return refused;
    }
    let queued = false;
    let started:
      | { attempt: number; leaseUntil: number | undefined; upstream?: string | undefined; input: SubmitInput }
      | undefined;
    try {
      const outcome = await committer.send(
        {
          type: 'Submit',
          reqId,
          accountId: principal.accountId,
          keyId: principal.keyId,
          model,
          promptChars: text.length,
          prompt: text,
          ttlMs,
          now: clock.now(),
          startNow: startNow === undefined ? undefined : { owner: startNow.owner, leaseMs: startNow.leaseMs },
          modelLimit: startNow?.modelLimit,
          upstreams: startNow?.upstreams,
          health: startNow?.health,
          affinity: affinityOf(models.get(model)?.config, input),
          maxProcessing: startNow === undefined ? undefined : (limits.maxProcessing ?? undefined),
          input: stored.kind,
          idempotency,
          maxQueued: limits.maxQueued,
          maxAttempts: config.processing.maxAttempts,
          metadata: input.metadata,
          face,
          cancelAfterMs,
          serviceTier,
        },
        { fromApi: true },
      );
      if (outcome instanceof Unavailable) return outcome;
      if (outcome instanceof IdempotencyKeyReused) return outcome;
      if (outcome instanceof QueueFull) {
        return new RateLimited({
          message: queueFullMessage(outcome.count, outcome.maxQueued, `the ${principal.plan} plan`),
          retryAfterSeconds: config.pollIntervalSeconds,
          budget: 'queued',
        });
      }
      // A fresh random id cannot already exist; if it somehow did, that is a fault, not the caller's error.
      if (isRefusal(outcome)) throw outcome;
      if (outcome.replayOf !== undefined) return { reqId: outcome.replayOf, model, replayed: true };
      const start = outcome.events.find((event) => event.type === 'RequestProcessingStarted');
      if (start !== undefined && start.type === 'RequestProcessingStarted') {
        // Started with its submit: it waited in no queue.
        metrics?.queueWaited(model, serviceTier, 0);
        started = {
          attempt: start.attempt,
          leaseUntil: start.leaseUntil,
          upstream: start.upstream,
          input: { model, prompt, messages, params },
        };
      } else queued = true;
    } finally {
      processor.submitted(reqId, model, startNow !== undefined, started, queued);
    }
    return { reqId, model, replayed: false };
  };

  // Both return the queuing's promise without awaiting it: the caller's body (in `options`) is not held meanwhile.
  const submitInput = async (principal: Principal, input: SubmitInput, options?: SubmitOptions): SubmitAnswer => {
    const cancelAfterMs = cancelAfterOf(options?.cancelAfter, config.requestTtlSeconds);
    if (cancelAfterMs instanceof InvalidRequest) return cancelAfterMs;
    const stored = storedInputOf(input);
    return (
      checkModelAndSize(input, stored.text, rulesOf(principal)) ??
      beyondModel(input, models.get(input.model)?.config.provider) ??
      queue(principal, input, stored, idempotencyOf(options), options?.beforeCommit, options?.face, cancelAfterMs)
    );
  };

  const submit = async (principal: Principal, body: unknown, options?: SubmitOptions): SubmitAnswer => {
    const cancelAfterMs = cancelAfterOf(options?.cancelAfter, config.requestTtlSeconds);
    if (cancelAfterMs instanceof InvalidRequest) return cancelAfterMs;
    // parseSubmission checks the model and the size itself (in the order the contract's messages come in).
    const submission = parseSubmission(body, rulesOf(principal));
    if (submission instanceof InvalidRequest) return submission;
    return queue(
      principal,
      submission,
      { kind: undefined, text: submission.prompt },
      idempotencyOf(options),
      options?.beforeCommit,
      undefined,
      cancelAfterMs,
    );
  };

  return { submit, submitInput };
};
