import type { Worker } from 'node:cluster';
import { isMetricsAsk, isMetricsPart, type MetricsAnswer, type MetricsCollect } from './metricsProtocol.js';

/** How long the primary waits for the server processes' figures: one that has not answered by then is left out. */
export const gatherWaitMs = 2_000;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

type Gather = {
  /** The processes asked that have not answered yet (cluster worker ids). */
  readonly waiting: Set<number>;
  /** By cluster worker id. */
  readonly answered: Map<number, readonly unknown[]>;
  finish(): void;
};

/**
 * The primary's side of a summed scrape (metricsProtocol.ts). One gather at a time: scrapes asked while one is in
 * flight share its answer, so a flood of scrapes costs at most one round of IPC per `gatherWaitMs`, whatever comes.
 */
export const createMetricsGatherer = (
  serving: () => Iterable<Worker>,
  logger: { warn(fields: object, message: string): void },
  waitMs = gatherWaitMs,
) => {
  let nextGather = 1;
  const open = new Map<number, Gather>();
  /** Each serving process's last figures: summed for it when it does not answer in time (scrapeSum.ts says why). */
  const last = new Map<number, readonly unknown[]>();
  /** The counters and histograms of processes that ended, summed: a counter must not go back when one ends. */
  let retired: Promise<readonly unknown[] | undefined> = Promise.resolve(undefined);
  const retire = (worker: Worker) => {
    const figures = last.get(worker.id);
    last.delete(worker.id);
    if (figures === undefined) return;
    retired = retired.then(async (before) => {
      const { retiredFigures } = await import('../../app/scrapeSum.js');
      return retiredFigures(before === undefined ? [figures] : [before, figures]).catch(() => before);
    });
  };
  /** The gather in flight, and the askers waiting for it. */
  let current: { readonly askers: { worker: Worker; id: number }[] } | undefined;

  const collect = async (): Promise<DistributiveOmit<MetricsAnswer, 'id'>> => {
    const gather = nextGather++;
    const targets = [...serving()].filter((worker) => worker.isConnected());
    const waiting = new Set(targets.map((worker) => worker.id));
    const answered = new Map<number, readonly unknown[]>();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, waitMs);
      const finish = () => {
        clearTimeout(timer);
        resolve();
      };
      open.set(gather, { waiting, answered, finish });
      const ask: MetricsCollect = { airs: 'metrics-collect', gather };
      // One that cannot be sent to stays in `waiting`: it counts as missing.
      for (const worker of targets) worker.send(ask, undefined, () => {});
      if (targets.length === 0) finish();
    });
    open.delete(gather);
    const late = [...waiting].flatMap((id) => {
      const figures = last.get(id);
      return figures === undefined ? [] : [figures];
    });
    if (waiting.size > 0)
      logger.warn(
        { late: late.length, missing: waiting.size - late.length, waitedMs: waitMs },
        'metrics: server processes did not answer a scrape in time',
      );
    try {
      const { sumFigures } = await import('../../app/scrapeSum.js');
      const before = await retired;
      const text = await sumFigures({
        // One that answered and ended since is in the retired figures already.
        answered: [...answered].flatMap(([id, figures]) => (last.has(id) ? [figures] : [])),
        late,
        missing: waiting.size - late.length,
        retired: before,
        waitedMs: waitMs,
      });
      return { airs: 'metrics-answer', text };
    } catch (error) {
      return { airs: 'metrics-answer', failed: error instanceof Error ? error.message : String(error) };
    }
  };

  const ask = (worker: Worker, id: number) => {
    if (current !== undefined) {
      current.askers.push({ worker, id });
      return;
    }
    const gathering = { askers: [{ worker, id }] };
    current = gathering;
    void collect().then((answer) => {
      current = undefined;
      for (const asker of gathering.askers)
        if (asker.worker.isConnected())
          asker.worker.send({ ...answer, id: asker.id } as MetricsAnswer, undefined, () => {});
    });
  };

  return {
    /** Hears a server process's asks and figures. */
    attach(worker: Worker) {
      worker.on('exit', () => retire(worker));
      worker.on('message', (message: unknown) => {
        if (isMetricsAsk(message)) ask(worker, message.id);
        else if (isMetricsPart(message)) {
          // Late or not, these are its latest figures: what a later gather sums if it is late again.
          if (!worker.isDead()) last.set(worker.id, message.figures);
          const gather = open.get(message.gather);
          if (gather === undefined || !gather.waiting.delete(worker.id)) return;
          gather.answered.set(worker.id, message.figures);
          if (gather.waiting.size === 0) gather.finish();
        }
      });
    },
  };
};
