/**
 * Child process: the BullMQ side's worker. One Worker, concurrency as given, echo processor (returns the prompt).
 * Prints `worker ready`, then `mark N at EPOCH_MS` when the N-th job of the process has completed, for each N in
 * `marks`.
 *
 * Usage: node worker.js '{"port":P,"queue":"…","concurrency":50,"marks":[5000,105000]}'
 */
import { Worker } from 'bullmq';
import { connectionFor } from './connection.js';

type Spec = { readonly port: number; readonly queue: string; readonly concurrency: number; readonly marks: number[] };
const spec = JSON.parse(process.argv[2] ?? '{}') as Spec;

const marks = new Set(spec.marks);
let completed = 0;
let failed = 0;

const worker = new Worker(spec.queue, async (job) => (job.data as { prompt: string }).prompt, {
  connection: connectionFor(spec.port),
  concurrency: spec.concurrency,
  autorun: false,
});
worker.on('completed', () => {
  completed++;
  if (marks.has(completed)) process.stdout.write(`mark ${completed} at ${Date.now()}\n`);
});
worker.on('failed', (_job, error) => {
  failed++;
  if (failed <= 5) process.stderr.write(`job failed: ${error.message}\n`);
});
worker.on('error', (error) => process.stderr.write(`worker error: ${error.message}\n`));

const stop = async () => {
  await worker.close().catch(() => {});
  process.stdout.write(`worker stopped: completed ${completed}, failed ${failed}\n`);
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());

await worker.waitUntilReady();
void worker.run();
process.stdout.write('worker ready\n');
