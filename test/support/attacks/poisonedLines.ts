import {
  type BatchSeen,
  chatLine,
  createBatch,
  createdBatch,
  endedStatuses,
  jsonOf,
  rereadBatch,
  sleep,
  timeLeft,
  uploadFile,
} from './client.js';

/**
 * Issue 40, finding 1: batch lines nested about 2 million levels deep (a 4 MB line). Each attacker uploads
 * `batchesPerAccount` files of one such line and makes a batch of each; the driver then watches the batches for
 * `watchMs` (or until all have ended) and says where each stands. Before the fix the lines skip the JSON bounds a
 * single request gets, and the runner throws on them and starts over every second, for the batch's whole window.
 */
export type PoisonedLinesOptions = {
  readonly url: string;
  /** The attacker accounts' keys (the issue: 3 free accounts). */
  readonly attackerKeys: readonly string[];
  readonly batchesPerAccount?: number;
  /** Levels of nesting of the poisoned value (2,000,000: a 4 MB line, under the 4 MiB body bound). */
  readonly depth?: number;
  /** How long the attack lasts, from the first upload: the batches are made, then watched until then. */
  readonly watchMs: number;
  readonly model?: string;
};

export type PoisonedLinesOutcome = {
  readonly lineBytes: number;
  /** Statuses of the uploads and of the batch creates. */
  readonly uploads: readonly number[];
  readonly creates: readonly number[];
  /** Each batch as last read: status, and its errors when it failed. */
  readonly batches: readonly BatchSeen[];
  /** How many had ended when the watch stopped. */
  readonly ended: number;
  /** From the first upload until all had ended; null when some had not by the end of the watch. */
  readonly allEndedAfterSeconds: number | null;
};

/** One line whose body holds a JSON Schema (any JSON a caller writes) nested `depth` levels deep. */
export const poisonedLine = (depth: number, model = 'echo'): string => {
  const schema = `{"type":"object","x":${'['.repeat(depth)}${']'.repeat(depth)}}`;
  return chatLine(
    'poisoned',
    model,
    'hello',
    `,"response_format":{"type":"json_schema","json_schema":{"name":"deep","schema":${schema}}}`,
  );
};

export const poisonedLines = async (options: PoisonedLinesOptions): Promise<PoisonedLinesOutcome> => {
  const { url } = options;
  const line = `${poisonedLine(options.depth ?? 2_000_000, options.model)}\n`;
  const started = performance.now();
  // Every call is bounded by what is left of the attack's time: a server the poison stalls cannot stretch it.
  const deadline = started + options.watchMs;
  const uploads: number[] = [];
  const creates: number[] = [];
  const made: { key: string; batchId: string }[] = [];
  await Promise.all(
    options.attackerKeys.flatMap((key) =>
      Array.from({ length: options.batchesPerAccount ?? 2 }, async (_, i) => {
        const uploaded = await uploadFile(url, key, line, {
          filename: `poisoned-${i}.jsonl`,
          timeoutMs: timeLeft(deadline, 60_000),
        });
        uploads.push(uploaded.status);
        const fileId = jsonOf<{ id: string }>(uploaded)?.id;
        if (uploaded.status !== 200 || fileId === undefined) return;
        const created = await createBatch(url, key, fileId, timeLeft(deadline, 30_000));
        creates.push(created.status);
        const batchId = jsonOf<{ id: string }>(created)?.id;
        if (created.status === 200 && batchId !== undefined) made.push({ key, batchId });
      }),
    ),
  );
  // Watched for the whole time even once they ended: the bench measures its bystander over the same window.
  let batches: BatchSeen[] = made.map(({ batchId }) => createdBatch(batchId));
  let allEndedAfterSeconds: number | null = null;
  for (;;) {
    batches = await Promise.all(
      made.map(({ key }, i) => rereadBatch(url, key, batches[i] as BatchSeen, timeLeft(deadline, 10_000))),
    );
    if (allEndedAfterSeconds === null && batches.every((batch) => endedStatuses.includes(batch.status)))
      allEndedAfterSeconds = (performance.now() - started) / 1000;
    if (performance.now() > deadline) break;
    await sleep(500);
  }
  return {
    lineBytes: Buffer.byteLength(line),
    uploads,
    creates,
    batches,
    ended: batches.filter((batch) => endedStatuses.includes(batch.status)).length,
    allEndedAfterSeconds,
  };
};
