import { setMaxListeners } from 'node:events';
import { maxAnswerBytesOf } from '../../config.js';
import {
  type GenerateInput,
  type Generation,
  UpstreamFailed,
  type UpstreamProblem,
} from '../../ports/ModelProvider.js';
import { answerTooLarge, answerWithin } from '../answerBound.js';
import type { LiveOutputShape } from '../LiveOutput.js';
import type { Model } from '../Models.js';
import type { ModelInput } from '../storedInput.js';
import { isPermanent, saidOf } from '../upstreamProblems.js';

/**
 * Why a model call gave no answer: in words for the log (`reason`), in words for the request's caller should it fail
 * for good by it (`said`), and whether no retry could mend it (`permanent`: the request fails for good at once).
 */
export type CallFailure = {
  readonly reason: string;
  readonly said?: string | undefined;
  readonly permanent?: boolean | undefined;
  /** The upstream's failure (connection refused or reset, no answer in time, 5xx, 429): another upstream may answer. */
  readonly upstreams?: boolean | undefined;
  /** Some of the answer reached whoever streams the request: the call cannot move to another upstream. */
  readonly streamed?: boolean | undefined;
};

/** Whether a problem is the upstream's rather than the request's (contract 19). */
const theUpstreams = (problem: UpstreamProblem): boolean =>
  problem.kind === 'unreachable' ||
  problem.kind === 'timeout' ||
  (problem.kind === 'status' && (problem.status >= 500 || problem.status === 429 || problem.status === 408));

/** How one model call ended: the model's answer, or why there is none. */
export type CallOutcome =
  | { readonly ok: true; readonly generation: Generation }
  | ({ readonly ok: false } & CallFailure);

/** `work`'s answer, or a rejection as soon as `signal` aborts, whichever comes first. */
export const settledBy = <T>(work: Promise<T>, signal: AbortSignal): Promise<T> => {
  if (signal.aborted) {
    // Whatever it ends with is of no interest any more.
    work.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const settle = () => signal.removeEventListener('abort', onAbort);
    work.then(
      (value) => {
        settle();
        resolve(value);
      },
      (error: unknown) => {
        settle();
        reject(error);
      },
    );
  });
};

const describe = (error: unknown): CallFailure => {
  const reason = (error instanceof Error ? error.message : String(error)).slice(0, 500);
  if (!(error instanceof UpstreamFailed)) return { reason };
  return {
    reason,
    said: saidOf(error.problem),
    permanent: isPermanent(error.problem),
    ...(theUpstreams(error.problem) ? { upstreams: true } : {}),
  };
};

/**
 * A provider that answers as soon as it is called (`echo` without a delay): nothing can time out or be cancelled in
 * between, so its calls join no group (a controller, a listener and a timer cost more than the call) and hear only
 * the pool's stop.
 */
const instant = (model: Model) => model.provider.answersAtOnce === true;

/**
 * Calls models, each call with its model's timeout, an abort for the pool's stop, and an abort of its own for a
 * cancel (but `instant` calls). Calls begun in the same event-loop turn for the same model share one AbortController
 * and one timer for the timeout and the stop: their timeouts would fire together anyway. A call is raced against its
 * signal, so a provider that ignores it (a stuck upstream) never holds a worker past the timeout. Callers streaming
 * the request hear its text as the model writes it (the model streams only then).
 */
export const createModelCaller = (live: LiveOutputShape | undefined) => {
  const stopping = new AbortController();
  type Group = {
    readonly controller: AbortController;
    readonly timer: NodeJS.Timeout;
    running: number;
    open: boolean;
  };
  const openGroups = new Map<string, Group>();
  const groups = new Set<Group>();
  const finish = (group: Group) => {
    clearTimeout(group.timer);
    groups.delete(group);
  };
  const closeGroups = () => {
    for (const group of openGroups.values()) {
      group.open = false;
      if (group.running === 0) finish(group);
    }
    openGroups.clear();
  };
  const join = (model: Model): Group => {
    let group = openGroups.get(model.config.id);
    if (group === undefined) {
      const controller = new AbortController();
      // Each call of the group listens to its signal (through AbortSignal.any and its race).
      setMaxListeners(0, controller.signal);
      group = {
        controller,
        timer: setTimeout(() => controller.abort(), model.config.timeoutMs),
        running: 0,
        open: true,
      };
      groups.add(group);
      // A call begun after the pool was told to stop is aborted at once, like those already running.
      if (stopping.signal.aborted) controller.abort();
      if (openGroups.size === 0) setImmediate(closeGroups);
      openGroups.set(model.config.id, group);
    }
    group.running++;
    return group;
  };
  const leave = (group: Group) => {
    group.running--;
    if (group.running === 0 && !group.open) finish(group);
  };
  /**
   * One call as an outcome, its text heard as the model writes it by whoever streams the request. An answer beyond the
   * model's `maxAnswerBytes` is a failure, whichever provider gave it.
   */
  const outcomeOf = async (
    reqId: string,
    model: Model,
    generate: (onDelta: GenerateInput['onDelta']) => Promise<Generation>,
    failure: (error: unknown) => CallFailure,
  ): Promise<CallOutcome> => {
    const heard = live?.listened(reqId) === true ? live.begin(reqId) : undefined;
    let answered = false;
    let streamed = false;
    const delta =
      heard === undefined
        ? undefined
        : (text: string) => {
            streamed = true;
            heard.delta(text);
          };
    try {
      const generation = await generate(delta);
      const bound = maxAnswerBytesOf(model.config);
      if (!answerWithin(generation, bound)) return { ok: false, ...describe(answerTooLarge(bound)) };
      answered = true;
      return { ok: true, generation };
    } catch (error) {
      const failed = failure(error);
      return { ok: false, ...failed, ...(streamed ? { streamed } : {}) };
    } finally {
      heard?.end(answered);
    }
  };
  /** Per request, the abort of its call in flight (every call but an `instant` one). */
  const cancellers = new Map<string, AbortController>();

  return {
    call: async (reqId: string, model: Model, input: ModelInput, upstream?: string): Promise<CallOutcome> => {
      if (instant(model))
        return outcomeOf(
          reqId,
          model,
          (onDelta) => model.provider.generate({ ...input, signal: stopping.signal, onDelta, upstream }),
          describe,
        );
      const group = join(model);
      const own = new AbortController();
      cancellers.set(reqId, own);
      const signal = AbortSignal.any([group.controller.signal, own.signal]);
      try {
        return await outcomeOf(
          reqId,
          model,
          (onDelta) => settledBy(model.provider.generate({ ...input, signal, onDelta, upstream }), signal),
          (error) => {
            if (own.signal.aborted) return { reason: 'cancelled' };
            const timedOut = signal.aborted && !stopping.signal.aborted;
            return timedOut
              ? { reason: `timed out after ${model.config.timeoutMs} ms`, upstreams: true }
              : describe(error);
          },
        );
      } finally {
        if (cancellers.get(reqId) === own) cancellers.delete(reqId);
        leave(group);
      }
    },
    /** Aborts the request's call in flight (not an `instant` one: it has ended already); returns whether there was one. */
    abort(reqId: string): boolean {
      const canceller = cancellers.get(reqId);
      canceller?.abort();
      return canceller !== undefined;
    },
    /** The requests whose calls could be aborted (to look for cancels made by other processes). */
    abortable: (): Iterable<string> => cancellers.keys(),
    /** Aborts every call, now and from now on (the pool stops). */
    stop(): void {
      stopping.abort();
      for (const group of groups) group.controller.abort();
    },
    stopped: () => stopping.signal.aborted,
  };
};

export type ModelCaller = ReturnType<typeof createModelCaller>;
