import { isMetricsAnswer, isMetricsCollect, type MetricsAsk, type MetricsPart } from './metricsProtocol.js';
import type { WriterChannel } from './remoteWriter.js';

/** How long a scrape waits for the primary's sum (its own wait for the processes, and the summing) before failing. */
const answerWaitMs = 5_000;
/** Scrapes waiting for the primary at once, at most: more answer at once with an error (an open `/metrics` flooded). */
const maxWaiting = 64;

/**
 * A server process's side of a summed scrape (metricsProtocol.ts): `gather()` asks the primary for the sum over
 * every process; the primary's `metrics-collect` is answered with this process's own figures (`answerWith`).
 */
export const createMetricsAsker = (channel: WriterChannel, waitMs = answerWaitMs) => {
  let nextId = 1;
  let figures: (() => Promise<readonly unknown[]>) | undefined;
  const waiting = new Map<number, { resolve: (text: string) => void; reject: (error: Error) => void }>();
  channel.onMessage((message) => {
    if (isMetricsCollect(message)) {
      const own = figures;
      if (own === undefined) return;
      // A process whose figures cannot be read does not answer: the primary counts it as missing.
      void own().then(
        (list) => {
          const part: MetricsPart = { airs: 'metrics-part', gather: message.gather, figures: list };
          channel.send(part, () => {});
        },
        () => {},
      );
    } else if (isMetricsAnswer(message)) {
      const caller = waiting.get(message.id);
      if (caller === undefined) return;
      waiting.delete(message.id);
      if ('text' in message) caller.resolve(message.text);
      else caller.reject(new Error(`the primary could not sum the processes' metrics: ${message.failed}`));
    }
  });
  return {
    /** From now on the primary's asks are answered with these figures. */
    answerWith(own: () => Promise<readonly unknown[]>) {
      figures = own;
    },
    /** The Prometheus text of every process's own figures summed (the primary's answer). */
    gather: () =>
      new Promise<string>((resolve, reject) => {
        if (waiting.size >= maxWaiting) return reject(new Error('too many scrapes are waiting for the primary'));
        const id = nextId++;
        const timer = setTimeout(() => {
          waiting.delete(id);
          reject(new Error(`the primary did not answer within ${waitMs} ms`));
        }, waitMs);
        waiting.set(id, {
          resolve: (text) => {
            clearTimeout(timer);
            resolve(text);
          },
          reject: (error) => {
            clearTimeout(timer);
            reject(error);
          },
        });
        const ask: MetricsAsk = { airs: 'metrics-ask', id };
        channel.send(ask, (error) => {
          if (error === null) return;
          const caller = waiting.get(id);
          waiting.delete(id);
          caller?.reject(new Error(`the scrape could not be sent to the primary: ${error.message}`));
        });
      }),
  };
};
