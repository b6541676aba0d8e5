import { setMaxListeners } from 'node:events';
import type { Generation } from '../../ports/ModelProvider.js';
import type { LiveOutputShape } from '../LiveOutput.js';
import type { Model } from '../Models.js';
import type { ModelInput } from '../storedInput.js';

/** How one model call ended: the model's answer, or why there is none, in words for the log. */
export type CallOutcome =
  | { readonly ok: true; readonly generation: Generation }
  | { readonly ok: false; readonly reason: string };

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

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error)).slice(0, 500);

/** Whether a call to this model takes long enough that cancelling it is worth an AbortController of its own. */
const abortable = (model: Model) => model.config.provider !== 'echo' || model.config.delayMs > 0;

/**
 * Calls models, each call with its model's timeout, an abort for the pool's stop, and (for calls worth aborting) an
 * abort of its own for a cancel. Calls begun in the same event-loop turn for the same model share one AbortController
 * and one timer: their timeouts would fire together anyway, and a controller with its signal costs more than an echo
 * call. A call is raced against its signal, so a provider that ignores it (a stuck upstream) never holds a worker past
 * the timeout. Callers streaming the request hear its text as the model writes it (the model streams only then).
 */
export const createModelCaller = (live: LiveOutputShape | undefined) => {
  const stopping = new AbortController();
  type Group = {
    readonly controller: AbortController;
    readonly timer: NodeJS.Timeout;
    /** The calls of the group still running, each ended (rejected) when the group's signal aborts. */
    readonly pending: Set<(reason: unknown) => void>;
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
      // The calls worth aborting listen to its signal each (through AbortSignal.any and their race); the others end
      // through the group's one listener below.
      setMaxListeners(0, controller.signal);
      const pending = new Set<(reason: unknown) => void>();
      // One listener for the whole group: a listener per call costs more than an echo call (Node's EventTarget).
      controller.signal.addEventListener(
        'abort',
        () => {
          for (const end of pending) end(controller.signal.reason);
          pending.clear();
        },
        { once: true },
      );
      group = {
        controller,
        timer: setTimeout(() => controller.abort(), model.config.timeoutMs),
        pending,
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
  /** `work`'s answer, or a rejection as soon as the group's signal aborts (as `settledBy`, with no listener of its own). */
  const settledByGroup = <T>(work: Promise<T>, group: Group): Promise<T> => {
    const { signal } = group.controller;
    if (signal.aborted) {
      work.catch(() => {});
      return Promise.reject(signal.reason);
    }
    return new Promise<T>((resolve, reject) => {
      group.pending.add(reject);
      // One handler each way rather than `then` and `finally`: a promise less per call.
      work.then(
        (value) => {
          group.pending.delete(reject);
          resolve(value);
        },
        (error: unknown) => {
          group.pending.delete(reject);
          reject(error);
        },
      );
    });
  };
  /** Per request, the abort of its call in flight (calls worth aborting only). */
  const cancellers = new Map<string, AbortController>();

  return {
    call: async (reqId: string, model: Model, input: ModelInput): Promise<CallOutcome> => {
      const group = join(model);
      let signal = group.controller.signal;
      const own = abortable(model) ? new AbortController() : undefined;
      if (own !== undefined) {
        cancellers.set(reqId, own);
        signal = AbortSignal.any([signal, own.signal]);
      }
      const heard = live?.listened(reqId) === true ? live.begin(reqId) : undefined;
      let answered = false;
      try {
        const work = model.provider.generate({ ...input, signal, onDelta: heard?.delta });
        const generation = await (own === undefined ? settledByGroup(work, group) : settledBy(work, signal));
        answered = true;
        return { ok: true, generation };
      } catch (error) {
        if (own?.signal.aborted) return { ok: false, reason: 'cancelled' };
        const timedOut = signal.aborted && !stopping.signal.aborted;
        return { ok: false, reason: timedOut ? `timed out after ${model.config.timeoutMs} ms` : describe(error) };
      } finally {
        heard?.end(answered);
        if (own !== undefined && cancellers.get(reqId) === own) cancellers.delete(reqId);
        leave(group);
      }
    },
    /** Aborts the request's call in flight, if it is one worth aborting; returns whether there was one. */
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
