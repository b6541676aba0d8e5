import { createInterface } from 'node:readline';
import type { Batch, Spend, StoreShape, ThrottleAsk } from '../../src/ports/Store.js';
import { inOddChunks, seededBytes } from './blobBytes.js';
import { toWire } from './processWire.js';

/**
 * The other process's side of the suite's "another process" (otherProcess.ts): a program that opens a store on the
 * same data as the test's and serves `commit`, `spend`, `attempts.reserve` and blobs (`files.write` of seeded bytes,
 * `files.digest`) over its stdin and stdout, one JSON line each way, each
 * line handled as it arrives (so several commits are in flight at once, as in a server). It says `{"ready":true}`
 * once the store is open, and closes it when its stdin ends. With `--commit-once` it commits the one batch its stdin
 * holds, writes the outcomes and exits: a test waits for that blocked, so nothing of its own process runs meanwhile.
 * An adapter's entry program (lmdbProcess.ts) opens its store and calls this.
 */

export type ProcessQuestion =
  | { readonly op: 'commit'; readonly batch: Batch }
  | { readonly op: 'spend'; readonly spends: readonly Spend[] }
  | { readonly op: 'reserve'; readonly ask: ThrottleAsk }
  | { readonly op: 'writeBlob'; readonly blobId: string; readonly seed: string; readonly bytes: number }
  | { readonly op: 'digestBlob'; readonly blobId: string };

/** A question as sent: numbered, so that its answer finds it while others are in flight. */
export type ProcessAsk = ProcessQuestion & { readonly id: number };

const answer = async (store: StoreShape, ask: ProcessAsk) => {
  try {
    if (ask.op === 'commit') return { id: ask.id, outcomes: (await store.commit(ask.batch)).map(toWire) };
    if (ask.op === 'reserve') return { id: ask.id, refused: (await store.throttle.reserve(ask.ask)) ?? null };
    if (ask.op === 'writeBlob') {
      const chunks = inOddChunks(seededBytes(ask.seed, ask.bytes));
      return { id: ask.id, stored: await store.files.write(ask.blobId, chunks, ask.bytes, Date.now()) };
    }
    if (ask.op === 'digestBlob') return { id: ask.id, stored: (await store.files.digest(ask.blobId)) ?? null };
    return { id: ask.id, decisions: await store.spend(ask.spends) };
  } catch (error) {
    return { id: ask.id, failure: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
  }
};

const readAll = async (stream: NodeJS.ReadableStream) => {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
};

export const serveStore = async (store: StoreShape, mode: string | undefined) => {
  if (mode === '--commit-once') {
    const batch = JSON.parse(await readAll(process.stdin)) as Batch;
    const outcomes = await store.commit(batch);
    process.stdout.write(JSON.stringify(outcomes.map(toWire)));
    await store.close();
    return;
  }
  const inFlight = new Set<Promise<void>>();
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    const handled = answer(store, JSON.parse(line) as ProcessAsk).then((reply) => {
      process.stdout.write(`${JSON.stringify(reply)}\n`);
    });
    inFlight.add(handled);
    void handled.finally(() => inFlight.delete(handled));
  });
  process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
  await new Promise((resolve) => lines.once('close', resolve));
  await Promise.all(inFlight);
  await store.close();
};
