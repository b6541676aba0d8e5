/**
 * Callers waiting for a request's outcome in this process (a waiting create, a stream): told when an outcome of the
 * request is durable here, when a timeout passes, or when their signal aborts. Only a hint to look again: the caller
 * reads the request's state, which another process may have changed.
 */
export const createWaiters = () => {
  const waiting = new Map<string, Set<() => void>>();
  return {
    tell(reqId: string): void {
      const set = waiting.get(reqId);
      if (set === undefined) return;
      waiting.delete(reqId);
      for (const resolve of set) resolve();
    },
    wait: (reqId: string, timeoutMs: number, signal?: AbortSignal) =>
      new Promise<void>((resolve) => {
        if (signal?.aborted === true) return resolve();
        let set = waiting.get(reqId);
        if (set === undefined) {
          set = new Set();
          waiting.set(reqId, set);
        }
        const waiters = set;
        let timer: NodeJS.Timeout | undefined;
        const done = () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', done);
          waiters.delete(done);
          if (waiters.size === 0 && waiting.get(reqId) === waiters) waiting.delete(reqId);
          resolve();
        };
        timer = setTimeout(done, Math.max(0, timeoutMs));
        signal?.addEventListener('abort', done, { once: true });
        waiters.add(done);
      }),
  };
};

export type Waiters = ReturnType<typeof createWaiters>;
