/**
 * Child process: the BullMQ side's producers. `producers` concurrent loops in one process, each awaiting
 * `queue.add` before its next one, until `count` jobs are added. Prints one JSON line:
 * {startedAt, finishedAt, added, errors}.
 *
 * Usage: node producer.js '{"port":P,"queue":"…","count":100000,"producers":64}'
 */
import { Queue } from 'bullmq';
import { connectionFor } from './connection.js';

type Spec = { readonly port: number; readonly queue: string; readonly count: number; readonly producers: number };
const spec = JSON.parse(process.argv[2] ?? '{}') as Spec;
const data = { model: 'echo', prompt: 'hello' };

const queue = new Queue(spec.queue, { connection: connectionFor(spec.port) });
await queue.waitUntilReady();

let next = 0;
let added = 0;
let errors = 0;
const producer = async () => {
  while (next < spec.count) {
    next++;
    try {
      await queue.add('echo', data, { removeOnComplete: { age: 86_400 } });
      added++;
    } catch (error) {
      errors++;
      if (errors <= 5) process.stderr.write(`queue.add failed: ${(error as Error).message}\n`);
    }
  }
};

const startedAt = Date.now();
await Promise.all(Array.from({ length: spec.producers }, producer));
const finishedAt = Date.now();
await queue.close().catch(() => {});
process.stdout.write(`${JSON.stringify({ startedAt, finishedAt, added, errors })}\n`);
process.exit(0);
