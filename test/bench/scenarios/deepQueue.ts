/**
 * `--only=deepqueue` (issue 28): does a deep queue drain as fast as a shallow one? On LMDB, one `airs serve`.
 *
 * For each queue (shallow, deep, shallow again): a data directory of its own, an account and key made with the CLI,
 * then `seed.ts` submits the requests through the project's store API (the server's own Submit commands) while no
 * server runs, so they all wait queued. Then `airs serve` starts (pinned to the server CPUs) and the bench follows
 * its log (store API, read only, beside the server) until every seeded request is completed. The drain rate is the
 * requests over the time from the server's first event to its last RequestCompleted (start-up left out). A sample of
 * the requests is polled over HTTP as completed. The deep queue's rate is compared with the shallow runs' mean.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openLmdbStore } from '../../../src/adapters/lmdb/LmdbStore.js';
import { call, createAccountWithKey, sandbox, startAirs } from '../airs.js';
import type { Context, Row, ScenarioResult } from '../context.js';
import { script } from '../paths.js';
import { runChild } from '../processes.js';
import { cpuTicksOf } from '../procfs.js';
import { ratio, round } from '../stats.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const minRatio = 0.8;

type Drain = {
  readonly label: string;
  readonly requests: number;
  readonly seedSeconds: number;
  readonly drainSeconds: number;
  readonly perSec: number;
  /** CPU seconds of the server from listening to the last completion, and requests per CPU second. */
  readonly cpuSeconds: number;
  readonly perCpuSecond: number;
};

const drainOne = async (context: Context, label: string, count: number): Promise<Drain> => {
  const { deepQueue } = context.options.sizes;
  const box = sandbox(context.workDir, `deepqueue-${label}`);
  const credentials = await createAccountWithKey(box, `${label}@example.com`);
  const sampleFile = join(box.dir, 'sample-ids.json');
  const spec = {
    dataDir: box.dataDir,
    accountId: credentials.accountId,
    keyId: credentials.keyId,
    count,
    sampleFile,
    sampleSize: 20,
    queuedOnly: true,
  };
  const seedStarted = performance.now();
  const seeded = await runChild('seed', process.execPath, [script('seed'), JSON.stringify(spec)], {
    cpus: context.cpus.server,
    timeoutMs: deepQueue.timeoutSec * 1000,
  });
  const line = seeded.stdout.trim().split('\n').pop() ?? '';
  if (seeded.exit.code !== 0 || !line.startsWith('{'))
    throw new Error(`seeding ${label} failed: ${seeded.stderr.trim().slice(-2000)}`);
  const seedSeconds = round((performance.now() - seedStarted) / 1000, 1);
  const { lastSeq } = JSON.parse(line) as { lastSeq: number };
  const store = openLmdbStore(box.dataDir);
  const refresh = () => (store.reads as { refresh?: () => void }).refresh?.();
  const airs = await startAirs(box, { cpus: context.cpus.server, timeoutMs: 60_000 });
  const ticksBefore = cpuTicksOf(airs.child.pid) ?? 0;
  try {
    let next = lastSeq + 1;
    let firstAt = 0;
    let lastCompletedAt = 0;
    let completed = 0;
    let failed = 0;
    const deadline = performance.now() + deepQueue.timeoutSec * 1000;
    while (completed + failed < count) {
      if (performance.now() > deadline)
        throw new Error(`${label}: ${completed + failed} of ${count} settled within ${deepQueue.timeoutSec} s`);
      await sleep(200);
      refresh();
      for (const event of store.syncReads.events(next)) {
        next = event.seq + 1;
        if (firstAt === 0) firstAt = event.at;
        if (event.type === 'RequestCompleted') {
          completed++;
          lastCompletedAt = Math.max(lastCompletedAt, event.at);
        } else if (event.type === 'RequestFailed') failed++;
        else if (event.type === 'RequestQueued') throw new Error(`${label}: a request was queued after seeding`);
      }
    }
    if (failed > 0) throw new Error(`${label}: ${failed} requests failed`);
    const cpuSeconds = round(((cpuTicksOf(airs.child.pid) ?? 0) - ticksBefore) / 100, 2);
    const { ids } = JSON.parse(readFileSync(sampleFile, 'utf8')) as { ids: string[] };
    for (const id of ids) {
      const polled = await call(airs.url, 'GET', `/v1/ai?req_id=${encodeURIComponent(id)}`, credentials.key);
      if (polled.body.status !== 'completed')
        throw new Error(`${label}: ${id} does not poll as completed: ${JSON.stringify(polled.body)}`);
    }
    const drainSeconds = (lastCompletedAt - firstAt) / 1000;
    const drain = {
      label,
      requests: count,
      seedSeconds,
      drainSeconds: round(drainSeconds, 2),
      perSec: round(completed / drainSeconds),
      cpuSeconds,
      perCpuSecond: round(completed / cpuSeconds),
    };
    context.log(
      `  ${label}: ${count} queued, seeded in ${seedSeconds} s, drained in ${drain.drainSeconds} s (${drain.perSec}/s, ${drain.perCpuSecond} per server CPU second)`,
    );
    return drain;
  } finally {
    await store.close();
    await airs.child.stop('SIGTERM', 20_000);
  }
};

export const deepQueueScenario = async (context: Context): Promise<ScenarioResult> => {
  const { deepQueue } = context.options.sizes;
  const shallowFirst = await drainOne(context, 'shallow-1', deepQueue.shallow);
  const deep = await drainOne(context, 'deep', deepQueue.deep);
  const shallowAfter = await drainOne(context, 'shallow-2', deepQueue.shallow);
  const shallowRate = round((shallowFirst.perSec + shallowAfter.perSec) / 2);
  const x = ratio(deep.perSec, shallowRate);
  const rows: Row[] = [
    {
      scenario: `deep queue (LMDB): ${deep.requests} queued requests drained`,
      target: `>= ${minRatio.toFixed(2)} x a ${deepQueue.shallow} queue`,
      measured: `${x.toFixed(2)} x`,
      detail: `deep ${deep.perSec}/s (${deep.drainSeconds} s); shallow ${shallowFirst.perSec}/s before, ${shallowAfter.perSec}/s after`,
      met: context.options.smoke ? null : x >= minRatio,
    },
    {
      scenario: `deep queue (LMDB): requests per server CPU second`,
      target: 'none (cost)',
      measured: `${ratio(deep.perCpuSecond, round((shallowFirst.perCpuSecond + shallowAfter.perCpuSecond) / 2)).toFixed(2)} x`,
      detail: `deep ${deep.perCpuSecond} (${deep.cpuSeconds} CPU s); shallow ${shallowFirst.perCpuSecond} before, ${shallowAfter.perCpuSecond} after`,
      met: null,
    },
  ];
  const notes = [
    `deep queue: requests submitted through the store API while no server ran (seed.ts, Submit only), then one airs serve (processing.concurrency 64) drains them; rate = requests / (server's first event to last completion). Shallow runs before and after the deep one; their mean is the reference. Cost: requests per CPU second of the server from listening to its last completion (a figure the machine's noise moves less).`,
  ];
  return { name: 'deepqueue', rows, notes, details: { shallowFirst, deep, shallowAfter, shallowRate, ratio: x } };
};
