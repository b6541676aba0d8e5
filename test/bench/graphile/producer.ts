/**
 * Child process: the graphile-worker side's producers. `producers` concurrent loops in one process, each awaiting
 * `addJob` (one transaction, one commit, per job) before its next one, until `count` jobs are added, through one
 * WorkerUtils with a pool of `maxPoolSize` connections. Prints one JSON line: {startedAt, finishedAt, added, errors}.
 *
 * Usage: node producer.js '{"url":"postgres://…","count":100000,"producers":64,"maxPoolSize":64}'
 */
import { Logger, makeWorkerUtils } from 'graphile-worker';
import { runProducers } from '../producers.js';

type Spec = { readonly url: string; readonly count: number; readonly producers: number; readonly maxPoolSize: number };
const spec = JSON.parse(process.argv[2] ?? '{}') as Spec;
const data = { model: 'echo', prompt: 'hello' };

const utils = await makeWorkerUtils({
  connectionString: spec.url,
  logger: new Logger(() => () => {}),
  maxPoolSize: spec.maxPoolSize,
});

// Every connection of the pool opened before the clock starts (as the other systems' clients are connected).
await Promise.all(
  Array.from({ length: Math.min(spec.producers, spec.maxPoolSize) }, () =>
    utils.withPgClient((client) => client.query('SELECT pg_sleep(0.05)')),
  ),
);
await runProducers({
  count: spec.count,
  producers: spec.producers,
  label: 'addJob',
  add: () => utils.addJob('echo', data),
});
await Promise.resolve(utils.release()).catch(() => {});
process.exit(0);
