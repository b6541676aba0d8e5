/**
 * Child process: fills an airs data directory with completed requests through the project's own store API:
 * for each request the commands the server sends (Submit, StartAttempt, RecordSuccess), committed with
 * `store.commit`, which decides them, appends the real domain events and keeps views, indexes and payloads in the
 * same transaction. Many requests share a batch and many batches are in flight at once.
 *
 * Usage: node seed.js '{"dataDir":…,"accountId":…,"keyId":…,"count":N,"sampleFile":…,"sampleSize":K}'
 * Prints one JSON line: {requests, events, seconds, lastSeq}. Keeps K ids, sampled uniformly, in sampleFile.
 */

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { openLmdbStore } from '../../src/adapters/lmdb/LmdbStore.js';
import type { Command } from '../../src/domain/commands.js';
import { randomIds } from '../../src/ports/Ids.js';

type SeedSpec = {
  readonly dataDir: string;
  readonly accountId: string;
  readonly keyId: string;
  /** Requests to add (on top of whatever the directory holds). */
  readonly count: number;
  /** JSON `{population, ids}`: a uniform sample of all ids seeded into this directory (merged on a later run). */
  readonly sampleFile: string;
  readonly sampleSize: number;
  /** Requests per batch of concurrent transactions. */
  readonly batch?: number;
  /** Requests per transaction. */
  readonly perTransaction?: number;
  /** Give up after this long (a bound, not a target). */
  readonly timeoutMs?: number;
  /** Submit only: the requests stay queued (for a server to drain when it starts). */
  readonly queuedOnly?: boolean;
};

const spec = JSON.parse(process.argv[2] ?? '{}') as SeedSpec;
const prompt = 'hello from the airs bench seeder';
const ttlMs = 86_400_000;
const batchSize = spec.batch ?? 5_000;
const perTransaction = spec.perTransaction ?? 50;
const deadline = Date.now() + (spec.timeoutMs ?? 30 * 60_000);

const store = openLmdbStore(spec.dataDir);
const eventsBefore = store.syncReads.lastSeq();

/** Reservoir sample (algorithm R) of the ids written now, merged with an earlier sample of the same directory. */
const sample: string[] = [];
let seen = 0;
const offer = (reqId: string) => {
  seen++;
  if (sample.length < spec.sampleSize) sample.push(reqId);
  else {
    const slot = Math.floor(Math.random() * seen);
    if (slot < spec.sampleSize) sample[slot] = reqId;
  }
};

const shuffle = <T>(items: readonly T[]): T[] => {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
};

/** The commands the server sends for one request that is queued, started and completed (or only queued). */
const commandsOf = (reqId: string, at: number): Command[] => {
  const all = allCommandsOf(reqId, at);
  return spec.queuedOnly === true ? all.slice(0, 1) : all;
};
const allCommandsOf = (reqId: string, at: number): Command[] => [
  {
    type: 'Submit',
    reqId,
    accountId: spec.accountId,
    keyId: spec.keyId,
    model: 'echo',
    promptChars: prompt.length,
    prompt,
    ttlMs,
    now: at,
  },
  { type: 'StartAttempt', reqId, now: at + 1 },
  { type: 'RecordSuccess', reqId, responseChars: prompt.length, response: prompt, now: at + 2 },
];

/** One batch (one durable write) holding `size` whole requests: decided, appended and projected as in the server. */
const seedTransaction = async (size: number, at: number) => {
  const reqIds = Array.from({ length: size }, () => randomIds.requestId());
  for (const reqId of reqIds) offer(reqId);
  const outcomes = await store.commit({ commands: reqIds.flatMap((reqId) => commandsOf(reqId, at)) });
  const refused = outcomes.find((outcome) => !('events' in outcome));
  if (refused !== undefined) throw refused;
};

const main = async () => {
  const started = performance.now();
  let written = 0;
  let lastReport = started;
  while (written < spec.count) {
    if (Date.now() > deadline) throw new Error(`seeding stopped by its time bound after ${written} requests`);
    const size = Math.min(batchSize, spec.count - written);
    const now = Date.now();
    const batch: Promise<void>[] = [];
    for (let done = 0; done < size; done += perTransaction)
      batch.push(seedTransaction(Math.min(perTransaction, size - done), now));
    await Promise.all(batch);
    written += size;
    if (performance.now() - lastReport > 5_000) {
      lastReport = performance.now();
      const rate = Math.round(written / ((lastReport - started) / 1000));
      process.stderr.write(`seed: ${written}/${spec.count} requests (${rate}/s)\n`);
    }
  }
  const seconds = (performance.now() - started) / 1000;
  // Keep a uniform sample of the whole directory: merge with the earlier one in proportion to the populations.
  const earlier: { population: number; ids: string[] } = existsSync(spec.sampleFile)
    ? JSON.parse(readFileSync(spec.sampleFile, 'utf8'))
    : { population: 0, ids: [] };
  const population = earlier.population + seen;
  const fromEarlier = Math.round((spec.sampleSize * earlier.population) / population);
  const ids = [...shuffle(earlier.ids).slice(0, fromEarlier), ...sample.slice(0, spec.sampleSize - fromEarlier)];
  writeFileSync(spec.sampleFile, JSON.stringify({ population, ids: shuffle(ids) }));
  const lastSeq = store.syncReads.lastSeq();
  await store.close();
  process.stdout.write(
    `${JSON.stringify({ requests: written, events: lastSeq - eventsBefore, lastSeq, seconds: Math.round(seconds * 100) / 100 })}\n`,
  );
};

main().catch((error: unknown) => {
  process.stderr.write(`seed failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
