/**
 * Child process: the BullMQ side's producers. `producers` concurrent loops in one process, each awaiting
 * `queue.add` before its next one, until `count` jobs are added. Prints one JSON line:
 * {startedAt, finishedAt, added, errors}.
 *
 * Usage: node producer.js '{"port":P,"queue":"…","count":100000,"producers":64}'
 */
import { Queue } from 'bullmq';
import { runProducers } from '../producers.js';
import { connectionFor } from './connection.js';

type Spec = { readonly port: number; readonly queue: string; readonly count: number; readonly producers: number };
const spec = JSON.parse(process.argv[2] ?? '{}') as Spec;
const data = { model: 'echo', prompt: 'hello' };

const queue = new Queue(spec.queue, { connection: connectionFor(spec.port) });
await queue.waitUntilReady();

await runProducers({
  count: spec.count,
  producers: spec.producers,
  label: 'queue.add',
  add: () => queue.add('echo', data, { removeOnComplete: { age: 86_400 } }),
});
await queue.close().catch(() => {});
process.exit(0);
