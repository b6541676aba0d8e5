import {
  type BatchSeen,
  countStatuses,
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
 * Issue 40, finding 4: each attacker makes `batchesPerAccount` batches of `linesPerBatch` lines whose prompts are
 * about `promptChars` long (the issue: 2 batches of 190 lines of ~990 KB each, every free-plan limit respected).
 * Before the fix the lines' prompts are held in memory as they are queued, and the queued lines take the committer's
 * room that interactive submits need. The files are streamed (one shared prompt, never a whole file here); the driver
 * then watches the batches until all have ended or `watchMs` has passed.
 */
export type LargeBatchesOptions = {
  readonly url: string;
  readonly attackerKeys: readonly string[];
  readonly batchesPerAccount?: number;
  readonly linesPerBatch?: number;
  readonly promptChars?: number;
  readonly model?: string;
  readonly watchMs: number;
};

export type LargeBatchesOutcome = {
  readonly fileBytes: number;
  readonly uploads: Readonly<Record<string, number>>;
  readonly creates: Readonly<Record<string, number>>;
  /** Each batch as last read. */
  readonly batches: readonly BatchSeen[];
  /** From the first upload until every batch had ended; null when some had not within `watchMs`. */
  readonly allEndedAfterSeconds: number | null;
};

/** A batch input of `lines` lines, each the same long prompt (numbered custom ids), as a stream and its length. */
const linesFile = (lines: number, promptChars: number, model: string) => {
  const prompt = Buffer.from('x'.repeat(promptChars));
  const prefix = (i: number) =>
    Buffer.from(
      `{"custom_id":"l${i}","method":"POST","url":"/v1/chat/completions","body":{"model":${JSON.stringify(model)},"messages":[{"role":"user","content":"${i} `,
    );
  const suffix = Buffer.from('"}]}}\n');
  let bytes = 0;
  for (let i = 0; i < lines; i++) bytes += prefix(i).length + prompt.length + suffix.length;
  async function* stream(): AsyncGenerator<Uint8Array> {
    for (let i = 0; i < lines; i++) {
      yield prefix(i);
      yield prompt;
      yield suffix;
    }
  }
  return { stream, bytes };
};

export const largeBatches = async (options: LargeBatchesOptions): Promise<LargeBatchesOutcome> => {
  const { url } = options;
  // The prompt as the route stores it ({messages: [...]} as JSON) stays within maxPromptChars (1,000,000).
  const file = linesFile(options.linesPerBatch ?? 190, options.promptChars ?? 990_000, options.model ?? 'echo');
  const started = performance.now();
  const deadline = started + options.watchMs;
  const uploads: number[] = [];
  const creates: number[] = [];
  const made: { key: string; batchId: string }[] = [];
  await Promise.all(
    options.attackerKeys.flatMap((key) =>
      Array.from({ length: options.batchesPerAccount ?? 2 }, async (_, i) => {
        const uploaded = await uploadFile(url, key, file.stream(), {
          filename: `large-${i}.jsonl`,
          fileBytes: file.bytes,
          timeoutMs: timeLeft(deadline, options.watchMs),
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
  let batches: BatchSeen[] = made.map(({ batchId }) => createdBatch(batchId));
  let allEndedAfterSeconds: number | null = null;
  for (;;) {
    batches = await Promise.all(
      made.map(({ key }, i) => rereadBatch(url, key, batches[i] as BatchSeen, timeLeft(deadline, 10_000))),
    );
    if (batches.every((batch) => endedStatuses.includes(batch.status))) {
      allEndedAfterSeconds = (performance.now() - started) / 1000;
      break;
    }
    if (performance.now() > deadline) break;
    await sleep(500);
  }
  const counts = (statuses: number[]) => countStatuses(statuses.map((status) => ({ status, text: '', ms: 0 })));
  return { fileBytes: file.bytes, uploads: counts(uploads), creates: counts(creates), batches, allEndedAfterSeconds };
};
