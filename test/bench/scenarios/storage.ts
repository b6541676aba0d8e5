/**
 * What stored requests cost: `airs replay --verify` speed, start-up time and RSS with many stored requests.
 *
 * Two data directories, each with an enterprise account and key made by the CLI, filled by seed.ts (the project's
 * store API, real domain events). The large one is seeded in two steps: first to the event count at which verify
 * is timed, then on to the full request count for start-up and memory.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  airsJson,
  authHeaders,
  type Credentials,
  call,
  createAccountWithKey,
  type Sandbox,
  sandbox,
  startAirs,
} from '../airs.js';
import { type Context, profileFlags, type Row, type ScenarioResult } from '../context.js';
import { runLoad } from '../load.js';
import { script } from '../paths.js';
import { runChild } from '../processes.js';
import { type Memory, memoryOf, waitForIdle } from '../procfs.js';
import { median, round } from '../stats.js';

type Store = {
  readonly label: string;
  readonly box: Sandbox;
  readonly credentials: Credentials;
  readonly sampleFile: string;
};
type Seeded = { requests: number; events: number; lastSeq: number; seconds: number };

/** Issue 8's floors: private (anonymous) memory stays flat, verify at 500k events/s; issue 5's start-up. */
const targets = { privateGrowthMiB: 20, startupMs: 1_000, verifyEventsPerSec: 500_000 };

const makeStore = async (context: Context, label: string): Promise<Store> => {
  const box = sandbox(context.workDir, label);
  const credentials = await createAccountWithKey(box);
  return { label, box, credentials, sampleFile: join(box.dir, 'sample-ids.json') };
};

const seed = async (context: Context, store: Store, count: number): Promise<Seeded> => {
  const spec = {
    dataDir: store.box.dataDir,
    accountId: store.credentials.accountId,
    keyId: store.credentials.keyId,
    count,
    sampleFile: store.sampleFile,
    sampleSize: context.options.sizes.storage.pollSample,
  };
  const started = performance.now();
  const { exit, stdout, stderr } = await runChild('seed', process.execPath, [script('seed'), JSON.stringify(spec)], {
    timeoutMs: 60 * 60_000,
  });
  const line = stdout.trim().split('\n').pop() ?? '';
  if (exit.code !== 0 || !line.startsWith('{'))
    throw new Error(`seeding ${store.label} failed: ${stderr.trim().slice(-2000)}`);
  const seeded = JSON.parse(line) as Seeded;
  context.log(
    `  seeded ${store.label}: +${seeded.requests} requests (+${seeded.events} events) in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  return seeded;
};

const sampleIds = (store: Store): string[] =>
  (JSON.parse(readFileSync(store.sampleFile, 'utf8')) as { ids: string[] }).ids;

type StartFigures = { listeningMs: number; readyMs: number };
type MemoryFigures = { idle: Memory; afterPolls: Memory; afterWorkload: Memory; polls: number; submits: number };

/** Starts airs on `store` `starts` times: spawn → listening line, spawn → first poll answered. The last start also
 * runs the fixed memory workload (polls over the sampled ids, then submits) and reads RSS. */
const startsAndMemory = async (
  context: Context,
  store: Store,
): Promise<{ starts: StartFigures[]; memory: MemoryFigures }> => {
  const { storage, connections } = context.options.sizes;
  const ids = sampleIds(store);
  const probe = `/v1/ai?req_id=${encodeURIComponent(ids[0] as string)}`;
  const starts: StartFigures[] = [];
  for (let i = 1; i <= storage.starts; i++) {
    const last = i === storage.starts;
    const started = performance.now();
    const airs = await startAirs(store.box, {
      cpus: context.cpus.server,
      nodeArgs: last ? profileFlags(context, `storage-${store.label}`) : [],
    });
    try {
      const polled = await call(airs.url, 'GET', probe, store.credentials.key);
      const readyMs = performance.now() - started;
      if (polled.status !== 200 || polled.body.status !== 'completed') {
        throw new Error(`a seeded request does not poll as completed: ${polled.status} ${JSON.stringify(polled.body)}`);
      }
      starts.push({ listeningMs: round(airs.listeningMs), readyMs: round(readyMs) });
      if (!last) continue;

      await waitForIdle(airs.child.pid, { timeoutMs: 10_000 });
      const idle = memoryOf(airs.child.pid) as Memory;
      const pathsFile = join(store.box.dir, 'poll-paths.json');
      writeFileSync(pathsFile, JSON.stringify(ids.map((id) => `/v1/ai?req_id=${encodeURIComponent(id)}`)));
      const headers = authHeaders(store.credentials.key);
      const polls = await runLoad(
        {
          url: airs.url,
          method: 'GET',
          path: probe,
          pathsFile,
          headers,
          connections,
          durationSec: storage.memoryWorkloadSec,
        },
        context.cpus.load,
      );
      await waitForIdle(airs.child.pid, { timeoutMs: 10_000 });
      const afterPolls = memoryOf(airs.child.pid) as Memory;
      const submits = await runLoad(
        {
          url: airs.url,
          method: 'POST',
          path: '/v1/ai',
          headers: authHeaders(store.credentials.key, true),
          body: JSON.stringify({ model: 'echo', prompt: 'hello' }),
          connections,
          amount: storage.pollSample * 2,
        },
        context.cpus.load,
      );
      if (polls.non2xx + submits.non2xx > 0) throw new Error(`memory workload on ${store.label}: non-2xx answers`);
      await waitForIdle(airs.child.pid, { timeoutMs: 60_000 });
      const afterWorkload = memoryOf(airs.child.pid) as Memory;
      return { starts, memory: { idle, afterPolls, afterWorkload, polls: polls.requests, submits: submits.requests } };
    } finally {
      await airs.child.stop('SIGTERM', 20_000);
    }
  }
  throw new Error('no start-up was measured');
};

export const storageScenario = async (context: Context): Promise<ScenarioResult> => {
  const { storage } = context.options.sizes;
  const { smoke } = context.options;
  const [small, large] = await Promise.all([makeStore(context, 'store-small'), makeStore(context, 'store-large')]);
  // Two accounts/keys events are in each log already; the rest are 3 events per request.
  const verifyRequests = Math.max(1, Math.ceil((storage.verifyEvents - 2) / 3));
  context.log(`  seeding ${storage.smallRequests} and ${verifyRequests} requests (two seeders in parallel)`);
  const [smallSeed, largeSeed1] = await Promise.all([
    seed(context, small, storage.smallRequests),
    seed(context, large, Math.min(verifyRequests, storage.largeRequests)),
  ]);

  context.log(`  airs replay --verify on ${largeSeed1.lastSeq} events`);
  const verifyStarted = performance.now();
  const verify = await airsJson<{ ok: boolean; events: number; requests: number; differences: string[] }>(
    large.box,
    ['replay', '--verify'],
    { timeoutMs: 30 * 60_000, nodeArgs: profileFlags(context, 'verify', 'cli'), cpus: context.cpus.server },
  );
  const verifySeconds = (performance.now() - verifyStarted) / 1000;
  if (!verify.ok)
    throw new Error(`airs replay --verify found differences: ${verify.differences.slice(0, 3).join('; ')}`);
  const verifyRate = round(verify.events / verifySeconds);
  context.log(`  verified ${verify.events} events in ${verifySeconds.toFixed(2)} s (${verifyRate} events/s)`);

  const more = storage.largeRequests - largeSeed1.requests;
  const largeSeed2 = more > 0 ? await seed(context, large, more) : undefined;

  const figures: Record<string, Awaited<ReturnType<typeof startsAndMemory>>> = {};
  for (const store of [small, large]) {
    context.log(`  start-up and memory on ${store.label}`);
    figures[store.label] = await startsAndMemory(context, store);
  }
  const smallFig = figures[small.label] as Awaited<ReturnType<typeof startsAndMemory>>;
  const largeFig = figures[large.label] as Awaited<ReturnType<typeof startsAndMemory>>;
  const growth = round(largeFig.memory.afterWorkload.anonMiB - smallFig.memory.afterWorkload.anonMiB, 1);
  const readyLarge = median(largeFig.starts.map((s) => s.readyMs));
  const readySmall = median(smallFig.starts.map((s) => s.readyMs));
  const listeningLarge = median(largeFig.starts.map((s) => s.listeningMs));
  const mem = (m: Memory) => `${m.rssMiB} MiB (anon ${m.anonMiB}, file ${m.fileMiB})`;
  const largeCount = storage.largeRequests.toLocaleString('en');
  const smallCount = storage.smallRequests.toLocaleString('en');
  const rows: Row[] = [
    {
      scenario: `Memory: private (anonymous) with ${largeCount} stored requests vs ${smallCount}`,
      target: `grows < ${targets.privateGrowthMiB} MB`,
      measured: `${growth >= 0 ? '+' : ''}${growth} MiB`,
      detail: `${smallCount}: ${mem(smallFig.memory.afterWorkload)}; ${largeCount}: ${mem(largeFig.memory.afterWorkload)}`,
      met: smoke ? null : growth < targets.privateGrowthMiB,
    },
    {
      scenario: `Start-up with ${largeCount} stored requests`,
      target: `< ${targets.startupMs / 1000} s`,
      measured: `${readyLarge} ms`,
      detail: `spawn to "listening" ${listeningLarge} ms; with ${smallCount}: ${readySmall} ms (medians of ${storage.starts})`,
      met: smoke ? null : readyLarge < targets.startupMs,
    },
    {
      scenario: `airs replay --verify of ${verify.events.toLocaleString('en')} events`,
      target: `>= ${targets.verifyEventsPerSec.toLocaleString('en')} events/s`,
      measured: `${verifyRate.toLocaleString('en')} events/s`,
      detail: `${verifySeconds.toFixed(2)} s wall for the whole command (${verify.requests.toLocaleString('en')} requests)`,
      met: smoke ? null : verifyRate >= targets.verifyEventsPerSec,
    },
  ];
  const seedRate = round(
    (largeSeed1.requests + (largeSeed2?.requests ?? 0)) / (largeSeed1.seconds + (largeSeed2?.seconds ?? 0)),
  );
  const notes = [
    `Stored requests were made by test/bench/seed.ts with the project's store API: openLmdbStore(dir).commit({commands}) with the commands the server sends for a request that is queued, started and completed (Submit, StartAttempt, RecordSuccess; decided, appended and projected as in the server; req_ ids from the product's own generator (time-ordered), created at seeding time, 24 h TTL); 50 requests per batch (one log record of 150 events, one durable write), 100 batches in flight; account and key made with the airs CLI. Seeding ran at about ${seedRate} requests/s.`,
    `Memory: RSS of the server (VmRSS; anon = heap and other private memory, file = LMDB pages mapped in) after start-up, ${storage.memoryWorkloadSec} s of polls cycling over ${storage.pollSample} stored requests picked at random, and ${storage.pollSample * 2} submits, then idle. By phase, ${smallCount} / ${largeCount}: idle after start-up ${mem(smallFig.memory.idle)} / ${mem(largeFig.memory.idle)}; after the polls ${mem(smallFig.memory.afterPolls)} / ${mem(largeFig.memory.afterPolls)}; after the submits (the figure above) ${mem(smallFig.memory.afterWorkload)} / ${mem(largeFig.memory.afterWorkload)}.`,
    `Start-up: from spawning "airs serve" until its first answer to a poll of a stored request; the data files were in the page cache (just written).`,
    `Verify: wall time of "airs replay --verify --json" as a whole (node start-up included) on a log of ${verify.events} events (the large directory after the first seeding step), with no server running.`,
  ];
  return {
    name: 'storage',
    rows,
    notes,
    details: {
      seeding: { small: smallSeed, largeToVerify: largeSeed1, largeRest: largeSeed2 ?? null },
      verify: {
        ...verify,
        differences: verify.differences.length,
        seconds: round(verifySeconds, 3),
        eventsPerSec: verifyRate,
      },
      small: smallFig,
      large: largeFig,
      rssGrowthMiB: growth,
    },
  };
};
