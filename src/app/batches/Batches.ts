import * as Context from 'effect/Context';
import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import * as Option from 'effect/Option';
import { type BatchView, mayCancelBatch } from '../../domain/batch/state.js';
import { isRefusal } from '../../domain/commands.js';
import {
  AccountLimitReached,
  InvalidRequest,
  NotFound,
  type QuotaExceeded,
  RateLimited,
  type Unavailable,
} from '../../domain/errors.js';
import { couldBeId, idForMessage } from '../../domain/identifiers.js';
import { AppClock } from '../../ports/Clock.js';
import { Ids } from '../../ports/Ids.js';
import { Store, type StoreShape } from '../../ports/Store.js';
import { AppConfig } from '../AppConfig.js';
import { limitsOf, type Principal } from '../Auth.js';
import { Committer, type CommitterShape } from '../Committer.js';
import { type ListCall, Metrics } from '../Metrics.js';
import { StorageHealth } from '../StorageHealth.js';
import { createTokenBudget, type TokenBudget } from '../tokenBudget.js';
import { BatchEndpoints } from './BatchEndpoints.js';

/** A batch to make, as the route understood its body. */
export type BatchCreate = {
  readonly inputFileId: string;
  readonly endpoint: string;
  readonly completionWindow: string;
  /** The caller's metadata as the JSON text of the object (bounded by the route). */
  readonly metadata?: string | undefined;
  readonly outputExpiresAfterSeconds?: number | undefined;
};

export interface BatchesShape {
  /** Makes the batch (validated and run in the background); resolved once its creation is durable. */
  create(
    principal: Principal,
    create: BatchCreate,
  ): Promise<BatchView | InvalidRequest | NotFound | RateLimited | QuotaExceeded | Unavailable>;
  /** Why a create would be refused now whatever its body (the disk below its free-space floor): asked before the body
   * is read. */
  unavailable(): Unavailable | undefined;
  find(principal: Principal, batchId: string): Promise<BatchView | NotFound>;
  /** The account's batches, newest first, after `after` (an id). */
  list(
    principal: Principal,
    page: { readonly after?: string | undefined; readonly limit: number },
  ): Promise<{
    readonly batches: BatchView[];
    readonly hasMore: boolean;
  }>;
  /** Asks to cancel: no line is queued or started any more; answers the batch as it is then. A batch that ended (or is
   * ending: finalizing, past its window, cancelling or failing) is answered as it is. */
  cancel(principal: Principal, batchId: string): Promise<BatchView | NotFound | Unavailable>;
}

export class Batches extends Context.Service<Batches, BatchesShape>()('airs/Batches') {}

/** The one completion window OpenAI offers. */
export const completionWindows = ['24h'] as const;

export const createBatches = (deps: {
  readonly store: StoreShape;
  readonly send: CommitterShape['send'];
  readonly now: () => number;
  readonly newId: () => string;
  readonly endpoints: readonly string[];
  readonly windowMs: number;
  readonly maxInProgress: (principal: Principal) => number;
  /** Why new work is refused now (StorageHealth's `refusal`). */
  readonly refusal?: () => Unavailable | undefined;
  /** Counts the rows a list call read (the Metrics service's `listRead`). */
  readonly listRead?: (list: ListCall, rows: number) => void;
  /** The account's token limits (app/tokenBudget.ts): a batch is refused at creation once its budget is used. */
  readonly tokenBudget?: TokenBudget | undefined;
}): BatchesShape => {
  const { store } = deps;
  const notFound = (batchId: string) => new NotFound({ message: `no batch ${idForMessage(batchId)}` });
  const own = async (principal: Principal, batchId: string) => {
    if (!couldBeId('batch', batchId)) return undefined;
    const view = await store.reads.batch(batchId);
    return view === undefined || view.state.context.accountId !== principal.accountId ? undefined : view;
  };

  return {
    create: async (principal, create) => {
      if (!deps.endpoints.includes(create.endpoint))
        return new InvalidRequest({
          message: `endpoint must be one of ${deps.endpoints.join(', ')}; got ${JSON.stringify(create.endpoint.slice(0, 100))}`,
          details: { param: 'endpoint' },
        });
      if (!(completionWindows as readonly string[]).includes(create.completionWindow))
        return new InvalidRequest({
          message: `completion_window must be "24h"; got ${JSON.stringify(create.completionWindow.slice(0, 50))}`,
          details: { param: 'completion_window' },
        });
      if (!couldBeId('file', create.inputFileId))
        return new NotFound({ message: `no file ${idForMessage(create.inputFileId)}` });
      const tokenCheck = deps.tokenBudget?.check(principal);
      const tokenRefusal = tokenCheck === undefined ? undefined : await tokenCheck;
      if (tokenRefusal !== undefined) return tokenRefusal;
      const batchId = deps.newId();
      // The API's lane: refused (503) while the disk is below its free-space floor or the committer's queue is full,
      // as a submit is.
      const outcome = await deps.send(
        {
          type: 'Batch',
          batchId,
          command: {
            type: 'CreateBatch',
            accountId: principal.accountId,
            keyId: principal.keyId,
            endpoint: create.endpoint,
            inputFileId: create.inputFileId,
            completionWindow: create.completionWindow,
            windowMs: deps.windowMs,
            metadata: create.metadata,
            outputExpiresAfterSeconds: create.outputExpiresAfterSeconds,
            // The plan's bound of batches not ended: decided inside the store's write, against the account's count
            // there (exact across processes and nodes).
            maxInProgress: deps.maxInProgress(principal),
            now: deps.now(),
          },
        },
        { fromApi: true },
      );
      if (!('events' in outcome)) {
        if (!isRefusal(outcome)) return outcome;
        if (outcome instanceof AccountLimitReached)
          return new RateLimited({ message: outcome.message, retryAfterSeconds: 60, budget: outcome.budget });
        // The input file is gone, another account's, or not a batch's input: named in the message.
        const wrongPurpose = outcome.message.includes('purpose');
        return wrongPurpose
          ? new InvalidRequest({ message: outcome.message, details: { param: 'input_file_id' } })
          : new NotFound({ message: `no file ${idForMessage(create.inputFileId)}` });
      }
      return (await store.reads.batch(batchId)) as BatchView;
    },
    unavailable: () => deps.refusal?.(),
    find: async (principal, batchId) => (await own(principal, batchId)) ?? notFound(batchId),
    list: async (principal, page) => {
      let from: { createdAt: number; id: string } | undefined;
      if (page.after !== undefined) {
        const cursor = await own(principal, page.after);
        if (cursor === undefined) return { batches: [], hasMore: false };
        from = { createdAt: cursor.state.context.createdAt, id: page.after };
      }
      const ids = await store.reads.listOf('accountBatches', principal.accountId, {
        from,
        order: 'desc',
        limit: page.limit + 1,
      });
      const batches: BatchView[] = [];
      for (const id of ids.slice(0, page.limit)) {
        const view = await store.reads.batch(id);
        if (view !== undefined) batches.push(view);
      }
      deps.listRead?.('batches', (page.after === undefined ? 0 : 1) + ids.length + Math.min(ids.length, page.limit));
      return { batches, hasMore: ids.length > page.limit };
    },
    cancel: async (principal, batchId) => {
      const view = await own(principal, batchId);
      if (view === undefined) return notFound(batchId);
      // Only a validating or in-progress batch takes a cancel (the machine says so): any other is answered as it is.
      const now = deps.now();
      if (!mayCancelBatch(view.state, now)) return view;
      const outcome = await deps.send({
        type: 'Batch',
        batchId,
        command: { type: 'CancelBatch', accountId: principal.accountId, now },
      });
      if (!('events' in outcome) && !isRefusal(outcome)) return outcome;
      return (await store.reads.batch(batchId)) ?? notFound(batchId);
    },
  };
};

export const BatchesLayer = Layer.effect(
  Batches,
  Effect.gen(function* () {
    const config = yield* AppConfig;
    const store = yield* Store;
    const committer = yield* Committer;
    const clock = yield* AppClock;
    const ids = yield* Ids;
    const endpoints = yield* BatchEndpoints;
    return Batches.of(
      createBatches({
        store,
        send: (command, options) => committer.send(command, options),
        now: () => clock.now(),
        newId: () => `batch_${ids.requestId().slice('req_'.length)}`,
        endpoints: endpoints.endpoints,
        windowMs: config.batches.windowSeconds * 1000,
        maxInProgress: (principal) => limitsOf(config.plans, principal).maxBatchesInProgress,
        refusal: (yield* StorageHealth).refusal,
        listRead: Option.getOrUndefined(yield* Effect.serviceOption(Metrics))?.listRead,
        tokenBudget: createTokenBudget({ reads: store.reads, plans: () => config.plans, now: () => clock.now() }),
      }),
    );
  }),
);
