import { type FSWatcher, watch } from 'node:fs';

/** How long change notifications are gathered before listeners hear one (a burst of commits is one change). */
const gatherMs = 10;
/** How often the log's end is looked at when the file cannot be watched. */
const pollMs = 250;
/** How often it is looked at anyway, should a notification go missing (a file system that drops them). */
const backstopMs = 5_000;

/**
 * Tells listeners when another process changed the environment: the data file is watched (the kernel says when it
 * is written), and a change is a log end this process has not accounted for (its own commits account for themselves
 * when nothing came between them). Watched only while somebody listens. A file that cannot be watched is looked at
 * every 250 ms instead, and a watched one every 5 s as well.
 */
export const watchChanges = (file: string, lastSeq: () => number) => {
  const listeners = new Set<() => void>();
  let seen = -1;
  /** This process's commits (first seq before, last seq), by where they start: skipped when the log's end is read. */
  const own = new Map<number, number>();
  let watcher: FSWatcher | undefined;
  let poller: NodeJS.Timeout | undefined;
  let backstop: NodeJS.Timeout | undefined;
  let gathering: NodeJS.Timeout | undefined;
  const look = () => {
    gathering = undefined;
    const end = lastSeq();
    for (let to = own.get(seen); to !== undefined && to <= end; to = own.get(seen)) {
      own.delete(seen);
      seen = to;
    }
    if (end === seen) return;
    seen = end;
    for (const from of own.keys()) if (from < end) own.delete(from);
    for (const listener of listeners) listener();
  };
  const changed = () => {
    if (gathering !== undefined) return;
    gathering = setTimeout(look, gatherMs);
    gathering.unref();
  };
  const start = () => {
    seen = lastSeq();
    own.clear();
    backstop = setInterval(changed, backstopMs).unref();
    try {
      watcher = watch(file, { persistent: false }, changed);
      watcher.on('error', () => {
        watcher?.close();
        watcher = undefined;
        poller ??= setInterval(changed, pollMs).unref();
      });
    } catch {
      poller = setInterval(changed, pollMs).unref();
    }
  };
  const stop = () => {
    watcher?.close();
    watcher = undefined;
    if (poller !== undefined) clearInterval(poller);
    poller = undefined;
    if (backstop !== undefined) clearInterval(backstop);
    backstop = undefined;
    if (gathering !== undefined) clearTimeout(gathering);
    gathering = undefined;
  };
  return {
    /**
     * This process commits the events after `from` up to `to`: no change by another, if nothing came before. Said from
     * inside the write transaction, before the commit can be seen: a look between the commit and its acknowledgement
     * does not take it for another's (under load, with commits back to back, that would be most looks).
     */
    wrote(from: number, to: number) {
      if (listeners.size > 0 && to > from && from >= seen) own.set(from, to);
    },
    /** The commit said by `wrote` from `from` was rolled back. */
    unwrote(from: number) {
      own.delete(from);
    },
    onChange(listener: () => void): () => void {
      if (listeners.size === 0) start();
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0) stop();
      };
    },
    close: stop,
  };
};
