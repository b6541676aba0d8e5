/**
 * Child process: the graphile-worker side's producers. `producers` concurrent loops in one process, each awaiting
 * `addJob` (one transaction, one commit, per job) before its next one, until `count` jobs are added, through one
 * WorkerUtils with a pool of `maxPoolSize` connections. Prints one JSON line: {startedAt, finishedAt, added, errors}.
 *
 * Usage: node producer.js '{"url":"postgres://…","count":100000,"producers":64,"maxPoolSize":64}'
 */
import { Logger, makeWorkerUtils } from 'graphile-worker';

type Spec = { readonly url: string; readonly count: number; readonly producers: number; readonly maxPoolSize: number };
const spec = JSON.parse(process.argv[2] ?? '{}') as Spec;
const data = { model: 'echo', prompt: 'hello' };

const utils = await makeWorkerUtils({
  connectionString: spec.url,
  logger: new Logger(() => () => {}),
  maxPoolSize: spec.maxPoolSize,
});

let next = 0;
let added = 0;
let errors = 0;
const producer = async () => {
  while (next < spec.count) {
    next++;
    try {
      await utils.addJob('echo', data);
      added++;
    } catch (error) {
      errors++;
      if (errors <= 5) process.stderr.write(`addJob failed: ${(error as Error).message}\n`);
    }
  }
};

// Every connection of the pool opened before the clock starts (as the other systems' clients are connected).
await Promise.all(
  Array.from({ length: Math.min(spec.producers, spec.maxPoolSize) }, () =>
    utils.withPgClient((client) => client.query('SELECT pg_sleep(0.05)')),
  ),
);
const startedAt = Date.now();
await Promise.all(Array.from({ length: spec.producers }, producer));
const finishedAt = Date.now();
await Promise.resolve(utils.release()).catch(() => {});
process.stdout.write(`${JSON.stringify({ startedAt, finishedAt, added, errors })}\n`);
process.exit(0);
