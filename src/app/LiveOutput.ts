import * as Context from 'effect/Context';
import * as Layer from 'effect/Layer';

/** What a caller streaming a request hears of the attempt a worker of this process runs for it. */
export type LiveListener = {
  /** An attempt began: what follows is its text, from its first piece. */
  readonly begun: () => void;
  /** The next piece of the attempt's text. */
  readonly delta: (text: string) => void;
  /** The attempt ended; `answered`: with an answer, which is being recorded (it may still be refused, as for a request
   * cancelled meanwhile). */
  readonly ended: (answered: boolean) => void;
};

export interface LiveOutputShape {
  /** Whether anybody listens to the request now (a worker then asks its model to stream). */
  listened(reqId: string): boolean;
  /** Listens to the request's attempts from now on; returns the way to stop. */
  listen(reqId: string, listener: LiveListener): () => void;
  /** A worker begins an attempt; the returned function passes its pieces on, `end` tells how it ended. */
  begin(reqId: string): { readonly delta: (text: string) => void; readonly end: (answered: boolean) => void };
}

/**
 * Text as a model writes it, from the worker running a request to the callers streaming it in the same process
 * (contract 13). Nothing is kept: a piece goes to the listeners there are at that moment, so memory does not grow with
 * the text. A listener that arrives during an attempt hears nothing of it (it missed its beginning) and gets the whole
 * text from the store once the request completes; so does a caller whose request runs in another process.
 */
export class LiveOutput extends Context.Service<LiveOutput, LiveOutputShape>()('airs/LiveOutput') {}

const silent = { delta: () => {}, end: () => {} };

export const createLiveOutput = (): LiveOutputShape => {
  const listeners = new Map<string, Set<LiveListener>>();
  return {
    listened: (reqId) => listeners.has(reqId),
    listen: (reqId, listener) => {
      let set = listeners.get(reqId);
      if (set === undefined) {
        set = new Set();
        listeners.set(reqId, set);
      }
      set.add(listener);
      return () => {
        set.delete(listener);
        if (set.size === 0 && listeners.get(reqId) === set) listeners.delete(reqId);
      };
    },
    begin: (reqId) => {
      const set = listeners.get(reqId);
      if (set === undefined) return silent;
      // Those listening when the attempt begins hear all of it; later ones none of it.
      const audience = [...set];
      for (const listener of audience) listener.begun();
      const live = (listener: LiveListener) => set.has(listener);
      return {
        delta: (text) => {
          for (const listener of audience) if (live(listener)) listener.delta(text);
        },
        end: (answered) => {
          for (const listener of audience) if (live(listener)) listener.ended(answered);
        },
      };
    },
  };
};

export const LiveOutputLayer = Layer.sync(LiveOutput, createLiveOutput);
