import * as Context from 'effect/Context';
import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import * as Option from 'effect/Option';
import { type Command, payloadBytesOf } from '../domain/commands.js';
import { Unavailable } from '../domain/errors.js';
import {
  type CommandOutcome,
  type KeyUseEntry,
  StorageFault,
  Store,
  type StoreShape,
  StoreUnreachable,
} from '../ports/Store.js';
import { Metrics, type MetricsShape } from './Metrics.js';
import { StorageHealth, type StorageHealthShape, unavailableFor } from './StorageHealth.js';

/** How much the committer holds: beyond these, API submits are refused with 503 instead of growing memory. */
export type CommitterLimits = {
  /** Commands waiting for a batch (all callers). API submits are refused at this count. */
  readonly maxQueued: number;
  /** Bytes of text waiting (prompts, responses). API submits are refused at this size. */
  readonly maxQueuedBytes: number;
  /** Commands in one write transaction. */
  readonly maxBatch: number;
  /** Bytes of text in one write transaction (a batch takes at least one command, whatever its size). */
  readonly maxBatchBytes: number;
  /** How often the last uses of keys are saved (at most once per key in this time). */
  readonly keyUseFlushMs: number;
  /** Batches handed to the store and not durable yet: one being committed, the next one waiting behind it. */
  readonly maxInFlight: number;
};

export const defaultCommitterLimits: CommitterLimits = {
  maxQueued: 20_000,
  maxQueuedBytes: 256 * 1024 * 1024,
  maxBatch: 2_000,
  maxBatchBytes: 32 * 1024 * 1024,
  keyUseFlushMs: 1_000,
  maxInFlight: 2,
};

export type SendOptions = {
  /** An API call: refused with `Unavailable` when the queue is full. Internal callers (workers, sweeper) hold a
   * bounded number of commands of their own and are always queued, so no outcome of real work is dropped. */
  readonly fromApi?: boolean;
};

export interface CommitterShape {
  /** Queues a command for the next batch; resolves with its outcome once the batch is durable. */
  send(command: Command, options?: SendOptions): Promise<CommandOutcome | Unavailable>;
  /**
   * When each key was last used, by key id, not saved yet. Authentication sets it on every call (a Map set, nothing
   * else: no timer, no write); every `keyUseFlushMs` what it holds is taken out and rides on the next batch (a
   * batch of its own if none comes), so a key's last use is written at most once per interval, and at stop.
   */
  readonly keysUsed: Map<string, number>;
  /** Commands queued or being committed. */
  pending(): number;
  /** Hears the outcomes of every batch once it is durable (after its callers); returns the way to stop hearing. */
  onCommitted(listener: (outcomes: readonly (CommandOutcome | Error)[]) => void): () => void;
  /** Waits until everything queued so far is committed (for shutdown). */
  drain(): Promise<void>;
}

/** The actor system's mailbox: every change of state goes through one committer, one durable write per batch. */
export class Committer extends Context.Service<Committer, CommitterShape>()('airs/Committer') {}

type Waiting = {
  readonly command: Command;
  readonly bytes: number;
  readonly fromApi: boolean;
  readonly resolve: (outcome: CommandOutcome | Unavailable) => void;
  readonly reject: (error: Error) => void;
};

const retryAfterSeconds = 1;

export const createCommitter = (
  store: StoreShape,
  limits: CommitterLimits = defaultCommitterLimits,
  health?: StorageHealthShape,
  metrics?: Pick<MetricsShape, 'committed'>,
) => {
  const maxInFlight = Math.min(limits.maxInFlight, store.batchesInFlight ?? limits.maxInFlight);
  /** Two lanes (see `takeBatch`): the workers' and every other internal caller's commands, and the API's. */
  let work: Waiting[] = [];
  let api: Waiting[] = [];
  const queued = () => work.length + api.length;
  let queuedBytes = 0;
  /** Batches handed to the store and not durable yet, and the commands in them. While one is being committed, the
   * next is written behind it (its transaction follows at once), so the disk's flush is rarely waited for idle. */
  let inFlight = 0;
  let committing = 0;
  let scheduled = false;
  const keysUsed = new Map<string, number>();
  /** Key uses taken out of `keysUsed`, waiting for the next batch. */
  const keyUsesDue = new Map<string, number>();
  const takeKeyUses = () => {
    if (keysUsed.size === 0) return;
    for (const [keyId, at] of keysUsed) keyUsesDue.set(keyId, at);
    keysUsed.clear();
    schedule();
  };
  // The one timer for key uses: it looks at a map once per interval, and does nothing while no key was used.
  const keyUseTimer = setInterval(takeKeyUses, limits.keyUseFlushMs);
  keyUseTimer.unref();
  let drainWaiters: Array<() => void> = [];
  const committedListeners = new Set<(outcomes: readonly (CommandOutcome | Error)[]) => void>();

  const schedule = () => {
    if (scheduled || inFlight >= maxInFlight) return;
    scheduled = true;
    // Everything sent in this event-loop turn goes into the same batch.
    setImmediate(turn);
  };

  /**
   * Takes a batch: the internal lane first (claims, outcomes, releases, renewals, expiries: commands whose number the
   * workers and the sweeper bound), then the API's submits and cancels, up to the batch's count and byte bounds. So a
   * worker's outcome or claim waits for at most the batch being committed, never behind the submits queued before it
   * (the rule: docs/decisions.md, "Completions keep up with submits").
   */
  const takeBatch = (): { batch: Waiting[]; bytes: number } => {
    const batch: Waiting[] = [];
    let bytes = 0;
    const takeFrom = (lane: Waiting[]): number => {
      let count = 0;
      while (count < lane.length && batch.length < limits.maxBatch) {
        const next = lane[count] as Waiting;
        if (batch.length > 0 && bytes + next.bytes > limits.maxBatchBytes) break;
        bytes += next.bytes;
        batch.push(next);
        count++;
      }
      return count;
    };
    const fromWork = takeFrom(work);
    if (fromWork > 0) work = fromWork === work.length ? [] : work.slice(fromWork);
    const fromApi = takeFrom(api);
    if (fromApi > 0) api = fromApi === api.length ? [] : api.slice(fromApi);
    queuedBytes -= bytes;
    return { batch, bytes };
  };

  const turn = () => {
    scheduled = false;
    if (inFlight >= maxInFlight || (queued() === 0 && keyUsesDue.size === 0)) return settleIfDrained();
    const { batch, bytes: batchBytes } = takeBatch();
    const keyUses: KeyUseEntry[] = [];
    for (const [keyId, at] of keyUsesDue) keyUses.push({ keyId, at });
    keyUsesDue.clear();
    // The flush timer is left to run: re-arming it after every batch would cost a timer per batch under load; when it
    // fires with nothing left, its turn does nothing.
    inFlight++;
    committing += batch.length;
    const startedAt = performance.now();
    store
      .commit({
        commands: batch.map((waiting) => waiting.command),
        ...(keyUses.length === 0 ? {} : { keyUses }),
      })
      .then(
        (outcomes) => {
          health?.writeSucceeded(batchBytes);
          metrics?.committed(batch.length, (performance.now() - startedAt) / 1000, outcomes);
          batch.forEach((waiting, i) => {
            const outcome = outcomes[i];
            if (outcome instanceof Error && !('_tag' in outcome)) waiting.reject(outcome);
            else waiting.resolve(outcome as CommandOutcome);
          });
          for (const listener of committedListeners) listener(outcomes);
        },
        (error: unknown) => {
          // Nothing of the batch was acknowledged: every caller in it gets the error, none an acknowledgement. An API
          // caller whose batch failed for the store (its disk, or a database that cannot be reached: the batch may
          // or may not have been committed then) is told the service is unavailable; workers see the fault.
          const failure = error instanceof Error ? error : new Error(String(error));
          const storeFailed = failure instanceof StorageFault;
          if (failure instanceof StoreUnreachable) health?.unreachable(failure.message);
          else if (storeFailed) health?.writeFailed(failure.message);
          for (const waiting of batch) {
            if (storeFailed && waiting.fromApi) waiting.resolve(unavailableFor(failure));
            else waiting.reject(failure);
          }
        },
      )
      .finally(() => {
        inFlight--;
        committing -= batch.length;
        if (queued() > 0) schedule();
        else settleIfDrained();
      });
  };

  const settleIfDrained = () => {
    if (queued() === 0 && inFlight === 0 && !scheduled) for (const done of drainWaiters.splice(0)) done();
  };

  const send: CommitterShape['send'] = (command, options = {}) => {
    const bytes = payloadBytesOf(command);
    const fromApi = options.fromApi === true;
    const refusal = fromApi ? health?.refusal() : undefined;
    if (refusal !== undefined) return Promise.resolve(refusal);
    if (fromApi && (queued() >= limits.maxQueued || queuedBytes + bytes > limits.maxQueuedBytes)) {
      return Promise.resolve(
        new Unavailable({
          message: 'the service is writing as fast as it can and its queue is full; retry shortly',
          retryAfterSeconds,
        }),
      );
    }
    return new Promise<CommandOutcome | Unavailable>((resolve, reject) => {
      (fromApi ? api : work).push({ command, bytes, fromApi, resolve, reject });
      queuedBytes += bytes;
      schedule();
    });
  };

  const drain = () =>
    new Promise<void>((resolve) => {
      drainWaiters.push(resolve);
      schedule();
      settleIfDrained();
    });

  const stop = async () => {
    // The last uses of keys not saved yet go with the last batch.
    clearInterval(keyUseTimer);
    takeKeyUses();
    await drain();
    drainWaiters = [];
  };

  const onCommitted: CommitterShape['onCommitted'] = (listener) => {
    committedListeners.add(listener);
    return () => committedListeners.delete(listener);
  };

  return { send, keysUsed, pending: () => queued() + committing, drain, stop, onCommitted };
};

/** The committer as a layer: built on the store, drained (everything queued committed) when its scope ends. */
export const CommitterLayer = (limits?: CommitterLimits) =>
  Layer.effect(
    Committer,
    Effect.gen(function* () {
      const store = yield* Store;
      const health = yield* StorageHealth;
      const metrics = Option.getOrUndefined(yield* Effect.serviceOption(Metrics));
      const committer = yield* Effect.acquireRelease(
        Effect.sync(() => createCommitter(store, limits, health, metrics)),
        (c) => Effect.promise(() => c.stop()),
      );
      return Committer.of(committer);
    }),
  );
