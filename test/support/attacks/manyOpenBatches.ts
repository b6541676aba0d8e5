import { callJson, chatLine, createBatch, jsonOf, sleep, timeLeft, uploadFile } from './client.js';

/**
 * Issue 40, finding 5: more open batches than the runner looks at (the issue: 1,005, from 5 enterprise accounts at
 * their normal bound or 500 free accounts), then a new 10-line batch of another account: how long it stays
 * `validating`. Before the fix each tick reads the 1,000 oldest open batches only. The attackers' batches stay open
 * because their one line is of `stuckModel`, a model the caller configures to take hours (echo with a long delay and
 * `maxConcurrency` 1).
 */
export type ManyOpenBatchesOptions = {
  readonly url: string;
  readonly attackerKeys: readonly string[];
  readonly openBatches: number;
  readonly stuckModel: string;
  /** The account whose new batch is timed, its lines on `probeModel` (echo). */
  readonly probeKey: string;
  readonly probeLines?: number;
  readonly probeModel?: string;
  /** How long the probe may stay validating before the driver gives up waiting. */
  readonly probeTimeoutMs: number;
  /** Creates in flight at once. */
  readonly concurrency?: number;
  /** The creates stop after this long, however many are open (a server the attack stalls cannot stretch it). */
  readonly createTimeoutMs?: number;
};

export type ManyOpenBatchesOutcome = {
  /** Batches the attackers made (refusals beyond an account's bound are skipped: the next account makes them). */
  readonly opened: number;
  /** Creates answered otherwise than `200` or `429` (or not at all). */
  readonly failedCreates: number;
  readonly createSeconds: number;
  /** Seconds from the probe's create until it was seen past `validating`; null when it was not within the timeout. */
  readonly probeLeftValidatingAfterSeconds: number | null;
  /** The probe's status when the driver stopped looking. */
  readonly probeStatus: string;
};

export const manyOpenBatches = async (options: ManyOpenBatchesOptions): Promise<ManyOpenBatchesOutcome> => {
  const { url } = options;
  const started = performance.now();
  const stuckFile = `${chatLine('stuck', options.stuckModel, 'never done')}\n`;
  const files = new Map<string, string>();
  for (const key of options.attackerKeys) {
    const uploaded = await uploadFile(url, key, stuckFile, { filename: 'stuck.jsonl' });
    const id = jsonOf<{ id: string }>(uploaded)?.id;
    if (uploaded.status !== 200 || id === undefined)
      throw new Error(`an attacker's upload answered ${uploaded.status}`);
    files.set(key, id);
  }
  // Accounts in turn; an account whose bound refuses (429) is left out from then on.
  const full = new Set<string>();
  let opened = 0;
  let failedCreates = 0;
  let turn = 0;
  const createUntil = started + (options.createTimeoutMs ?? 120_000);
  const creator = async () => {
    while (opened < options.openBatches && full.size < options.attackerKeys.length && performance.now() < createUntil) {
      const key = options.attackerKeys[turn++ % options.attackerKeys.length] as string;
      if (full.has(key)) continue;
      opened++;
      const created = await createBatch(url, key, files.get(key) as string, timeLeft(createUntil, 30_000));
      if (created.status === 429) {
        full.add(key);
        opened--;
      } else if (created.status !== 200) {
        opened--;
        failedCreates++;
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 8 }, creator));
  const createSeconds = (performance.now() - started) / 1000;

  const probeLines = Array.from({ length: options.probeLines ?? 10 }, (_, i) =>
    chatLine(`p${i}`, options.probeModel ?? 'echo', `probe ${i}`),
  );
  const probeFile = await uploadFile(url, options.probeKey, `${probeLines.join('\n')}\n`, { filename: 'probe.jsonl' });
  const probeFileId = jsonOf<{ id: string }>(probeFile)?.id;
  if (probeFile.status !== 200 || probeFileId === undefined)
    throw new Error(`the probe's upload answered ${probeFile.status}`);
  const created = await createBatch(url, options.probeKey, probeFileId);
  const probeId = jsonOf<{ id: string }>(created)?.id;
  if (created.status !== 200 || probeId === undefined) throw new Error(`the probe's create answered ${created.status}`);
  const createdAt = performance.now();
  const probeUntil = createdAt + options.probeTimeoutMs;
  let probeStatus = 'validating';
  while (performance.now() < probeUntil) {
    const read = await callJson(
      url,
      'GET',
      `/v1/batches/${probeId}`,
      options.probeKey,
      undefined,
      timeLeft(probeUntil, 10_000),
    );
    probeStatus = jsonOf<{ status: string }>(read)?.status ?? `http ${read.status}`;
    if (probeStatus !== 'validating')
      return {
        opened,
        failedCreates,
        createSeconds,
        probeLeftValidatingAfterSeconds: (performance.now() - createdAt) / 1000,
        probeStatus,
      };
    await sleep(100);
  }
  return { opened, failedCreates, createSeconds, probeLeftValidatingAfterSeconds: null, probeStatus };
};
