import { type Answer, callJson, countStatuses, latencies, sleep, timeLeft, uploadFile } from './client.js';

/**
 * Issue 40, finding 2: an account with many small files lists them filtered by purpose, `limit=1`, ten times a
 * second (within a free plan's poll budget). Before the fix the filter reads `limit + 1` ids per step until it has
 * its page, so a purpose none of the files has walks every file of the account on each call, on the event loop.
 *
 * The uploads (`uploadManyFiles`: hours at a free plan's pace, so the caller raises the plan's `submitsPerMinute` to
 * run it in seconds) come first; the lists (`listFilesByPurpose`) are the attack.
 */

export type UploadManyOptions = {
  readonly url: string;
  readonly attackerKey: string;
  readonly files: number;
  /** Uploads in flight at once. */
  readonly concurrency?: number;
  /** Stops uploading after this long, however many are stored. */
  readonly timeoutMs: number;
};

export type UploadManyOutcome = {
  readonly stored: number;
  /** Statuses of every upload (`{"200": 20000}`; a bound on files per account shows as refusals). */
  readonly statuses: Readonly<Record<string, number>>;
  readonly seconds: number;
};

/** A small valid batch input, one line. */
const smallFile = `${JSON.stringify({
  custom_id: 'c',
  method: 'POST',
  url: '/v1/chat/completions',
  body: { model: 'echo', messages: [{ role: 'user', content: 'hi' }] },
})}\n`;

export const uploadManyFiles = async (options: UploadManyOptions): Promise<UploadManyOutcome> => {
  const started = performance.now();
  const deadline = started + options.timeoutMs;
  const statuses: Record<string, number> = {};
  let next = 0;
  let stored = 0;
  // A refusal (a bound on files, or on storage) ends the uploads: the rest would be refused the same way.
  let refusedFor = 0;
  const uploader = async () => {
    while (next < options.files && performance.now() < deadline && refusedFor < 20) {
      const n = next++;
      const answer = await uploadFile(options.url, options.attackerKey, smallFile, {
        filename: `f${n}.jsonl`,
        timeoutMs: timeLeft(deadline, 30_000),
      });
      const name = answer.status === 0 ? 'no answer' : String(answer.status);
      statuses[name] = (statuses[name] ?? 0) + 1;
      if (answer.status === 200) stored++;
      else refusedFor++;
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 8 }, uploader));
  return { stored, statuses, seconds: (performance.now() - started) / 1000 };
};

export type ListByPurposeOptions = {
  readonly url: string;
  readonly attackerKey: string;
  /** A purpose none of the uploads has (every upload is `batch`), so that the filter finds nothing. */
  readonly purpose?: string;
  readonly perSecond?: number;
  readonly durationMs: number;
};

export type ListByPurposeOutcome = {
  readonly calls: number;
  readonly statuses: Readonly<Record<string, number>>;
  /** Latencies of the answered lists. */
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
};

/** The most list calls left open at once: calls go out at the rate whether or not the earlier ones were answered. */
const maxOpenLists = 64;
/** A list not answered within this long is given up (counted as no answer): the attack ends soon after its time. */
const listTimeoutMs = 10_000;

export const listFilesByPurpose = async (options: ListByPurposeOptions): Promise<ListByPurposeOutcome> => {
  const everyMs = 1000 / (options.perSecond ?? 10);
  const path = `/v1/files?purpose=${encodeURIComponent(options.purpose ?? 'batch_output')}&limit=1`;
  const started = performance.now();
  const answers: Promise<Answer>[] = [];
  let open = 0;
  for (let n = 0; performance.now() - started < options.durationMs; n++) {
    if (open < maxOpenLists) {
      open++;
      answers.push(
        callJson(options.url, 'GET', path, options.attackerKey, undefined, listTimeoutMs).finally(() => {
          open--;
        }),
      );
    }
    await sleep(Math.max(0, started + (n + 1) * everyMs - performance.now()));
  }
  const all = await Promise.all(answers);
  const times = latencies(all.filter((answer) => answer.status !== 0).map((answer) => answer.ms));
  return {
    calls: all.length,
    statuses: countStatuses(all),
    p50Ms: times.p50Ms,
    p99Ms: times.p99Ms,
    maxMs: times.maxMs,
  };
};
