/**
 * Child process: the graphile-worker side's worker. One runner (`run`), concurrency as given, a local queue, a quiet
 * logger, an `echo` task (reads the prompt; graphile-worker stores no result). Prints `worker ready`, then `mark N at EPOCH_MS` when the N-th job of
 * the process has completed, for each N in `marks`.
 *
 * graphile-worker emits `job:complete` when the task has returned and its completion has been *sent*, not committed
 * (the worker does not await `completeJob`). So a mark is printed once the N-th job has completed and no job is left
 * in the jobs table (each completion deletes its job's row), that is once the last completion is committed: the time
 * of that look, taken every 5 ms from the N-th `job:complete` on.
 *
 * Usage: node worker.js '{"url":"postgres://…","concurrency":50,"localQueue":500,"maxPoolSize":52,"marks":[5000,105000]}'
 */
import { Logger, makeWorkerUtils, run } from 'graphile-worker';

type Spec = {
  readonly url: string;
  readonly concurrency: number;
  readonly localQueue: number;
  readonly maxPoolSize: number;
  readonly marks: readonly number[];
};
const spec = JSON.parse(process.argv[2] ?? '{}') as Spec;

const quiet = new Logger(() => () => {});
const utils = await makeWorkerUtils({ connectionString: spec.url, logger: quiet, maxPoolSize: 2 });
await utils.migrate();

const marks = new Set(spec.marks);
let completed = 0;
let failed = 0;

const emptyAt = async (): Promise<number> => {
  for (;;) {
    const { rows } = await utils.withPgClient((client) =>
      client.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM graphile_worker._private_jobs) AS any'),
    );
    if (rows[0]?.any === false) return Date.now();
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

const runner = await run({
  connectionString: spec.url,
  logger: quiet,
  concurrency: spec.concurrency,
  maxPoolSize: spec.maxPoolSize,
  noHandleSignals: true,
  taskList: {
    // The echo: its answer is the prompt (graphile-worker keeps no result: a task's return value is not stored).
    echo: async (payload) => {
      if (typeof (payload as { prompt?: unknown }).prompt !== 'string') throw new Error('no prompt');
    },
  },
  preset: { worker: { localQueue: { size: spec.localQueue } } },
});
runner.events.on('job:complete', ({ error }) => {
  if (error !== undefined && error !== null) {
    failed++;
    if (failed <= 5) process.stderr.write(`job failed: ${String(error)}\n`);
  }
  completed++;
  if (marks.has(completed)) {
    const mark = completed;
    void emptyAt().then((at) => process.stdout.write(`mark ${mark} at ${at}\n`));
  }
});

const stop = async () => {
  await Promise.resolve(runner.stop()).catch(() => {});
  await Promise.resolve(utils.release()).catch(() => {});
  process.stdout.write(`worker stopped: completed ${completed}, failed ${failed}\n`);
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
process.stdout.write('worker ready\n');
