import type { Worker } from 'node:cluster';
import { isMetricsAsk, isMetricsPart, type MetricsAnswer, type MetricsCollect } from './metricsProtocol.js';

/** How long the primary waits for the server processes' figures: one that has not answered by then is left out. */
export const gatherWaitMs = 2_000;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

type Gather = {
  /** The processes asked that have not answered yet (cluster worker ids). */
  readonly waiting: Set<number>;
  readonly answered: (readonly unknown[])[];
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
  /** The gather in flight, and the askers waiting for it. */
  let current: { readonly askers: { worker: Worker; id: number }[] } | undefined;

  const collect = async (): Promise<DistributiveOmit<MetricsAnswer, 'id'>> => {
    const gather = nextGather++;
    const targets = [...serving()].filter((worker) => worker.isConnected());
    const waiting = new Set(targets.map((worker) => worker.id));
    const answered: (readonly unknown[])[] = [];
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
    if (waiting.size > 0)
      logger.warn(
        { missing: waiting.size, waitedMs: waitMs },
        'metrics: server processes did not answer a scrape in time',
      );
    try {
      const { sumFigures } = await import('../../app/scrapeSum.js');
      return { airs: 'metrics-answer', text: await sumFigures({ answered, missing: waiting.size, waitedMs: waitMs }) };
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
      worker.on('message', (message: unknown) => {
        if (isMetricsAsk(message)) ask(worker, message.id);
        else if (isMetricsPart(message)) {
          const gather = open.get(message.gather);
          if (gather === undefined || !gather.waiting.delete(worker.id)) return;
          gather.answered.push(message.figures);
          if (gather.waiting.size === 0) gather.finish();
        }
      });
    },
  };
};
