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
  let watcher: FSWatcher | undefined;
  let poller: NodeJS.Timeout | undefined;
  let backstop: NodeJS.Timeout | undefined;
  let gathering: NodeJS.Timeout | undefined;
  const look = () => {
    gathering = undefined;
    const end = lastSeq();
    if (end === seen) return;
    seen = end;
    for (const listener of listeners) listener();
  };
  const changed = () => {
    if (gathering !== undefined) return;
    gathering = setTimeout(look, gatherMs);
    gathering.unref();
  };
  const start = () => {
    seen = lastSeq();
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
    /** This process committed the events after `from` up to `to`: no change by another, if nothing came before. */
    wrote(from: number, to: number) {
      if (from === seen) seen = to;
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
