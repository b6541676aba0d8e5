/**
 * `--only=fleet` (issue 41, contract 19): one model over 4 fake replicas of 8 places each against the same model
 * over 1 fake upstream of 32 places, the same delay on every one, end to end through one `airs serve` (submitted by
 * the load generator, completion read from the log as the e2e scenario does), run after run in one sitting. Then the
 * same 4 replicas with one answering `500` to half its calls (every request must complete), a run in which one
 * replica dies mid-flood (its connections reset from then on: the time from its death to the last call airs sent it
 * before the cool-down is reported), and the share of calls that land on the replica their prompt prefix is affine to.
 * The replicas run in a child process of their own (fleetChild.ts).
 */
import type { LmdbStore } from '../../../src/adapters/lmdb/LmdbStore.js';
import {
  authHeaders,
  benchConfig,
  call,
  createAccountWithKey,
  openAirsLmdbStore,
  sandbox,
  startAirs,
} from '../airs.js';
import type { Context, Figure, Row, ScenarioResult } from '../context.js';
import { microsPer, processTree, startCpuMeter } from '../cpuTime.js';
import type { FleetAnswer, FleetAsk } from '../fleetChild.js';
import { runLoad } from '../load.js';
import { script } from '../paths.js';
import { type Child, startChild } from '../processes.js';
import { median, ratio, round } from '../stats.js';
import { type LogFollower, lmdbFollower } from './airsEndToEnd.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const fourFloor = 0.9;
const failingFloor = 0.7;
/** Contract 19's first cool-down: calls after it are the trial calls, not calls sent before airs knew. */
const firstCooldownMs = 10_000;

/** An ask without its id (each union member on its own). */
type Without<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
type Ask = Without<FleetAsk, 'id'>;

/** Talks to the replicas' child process over IPC, one answer per ask. */
const replicasChild = (child: Child) => {
  let nextId = 1;
  return <T extends FleetAnswer>(ask: Ask): Promise<T> =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      const onMessage = (answer: FleetAnswer) => {
        if (answer.id !== id) return;
        child.process.off('message', onMessage);
        if (answer.ok) resolve(answer as T);
        else reject(new Error(`fleet replicas: ${answer.message}`));
      };
      child.process.on('message', onMessage);
      child.process.send({ ...ask, id } as FleetAsk);
    });
};

type Run = {
  readonly model: string;
  readonly requests: number;
  readonly completed: number;
  readonly failed: number;
  readonly seconds: number;
  readonly rps: number;
  readonly cpuUsPerRequest: number;
  /** When its load started (epoch ms): calls since then are its calls. */
  readonly since: number;
};

/** Calls on the replica a group's prompts mostly went to, over all calls of the groups. */
const affinityShare = (groups: Record<string, Record<string, number>>): number => {
  const byGroup = new Map<string, number[]>();
  for (const counts of Object.values(groups))
    for (const [group, n] of Object.entries(counts)) byGroup.set(group, [...(byGroup.get(group) ?? []), n]);
  let top = 0;
  let total = 0;
  for (const counts of byGroup.values()) {
    top += Math.max(...counts);
    total += counts.reduce((sum, n) => sum + n, 0);
  }
  return total === 0 ? Number.NaN : round(top / total, 3);
};

export const fleetScenario = async (context: Context): Promise<ScenarioResult> => {
  const sizes = context.options.sizes.fleet;
  const notes: string[] = [];
  const replicasProcess = startChild('fleet replicas', process.execPath, [script('fleetChild')], {
    cpus: context.cpus.load,
    ipc: true,
  });
  await replicasProcess.waitFor(/fleet replicas ready/, 20_000);
  const ask = replicasChild(replicasProcess);
  const behaviour = { delayMs: sizes.delayMs };
  const sets = { four: ['f0', 'f1', 'f2', 'f3'], failing: ['g0', 'g1', 'g2', 'g3'], dying: ['d0', 'd1', 'd2', 'd3'] };
  const { baseUrls = {} } = await ask<{ id: number; ok: true; baseUrls?: Record<string, string> }>({
    type: 'start',
    replicas: [
      { name: 'single', places: 32, behaviour },
      ...[...sets.four, ...sets.failing, ...sets.dying].map((name) => ({ name, places: 8, behaviour })),
    ],
  });
  await ask({ type: 'set', name: 'g3', behaviour: { fail500: 0.5 } });
  const model = (id: string, names: readonly string[]) => ({
    id,
    provider: 'openai',
    upstreamModel: 'fleet-model',
    timeoutMs: 30_000,
    maxRetries: 0,
    // Every side bounded alike: the model's places are its upstreams' (32), whatever the one-upstream form implies.
    maxConcurrency: 32,
    upstreams: names.map((name) => ({ name, baseUrl: baseUrls[name], maxConcurrency: name === 'single' ? 32 : 8 })),
  });
  const box = sandbox(context.workDir, 'fleet-airs', {
    ...benchConfig,
    models: [
      model('single', ['single']),
      model('four', sets.four),
      model('failing', sets.failing),
      model('dying', sets.dying),
    ],
  });
  const credentials = await createAccountWithKey(box);
  const airs = await startAirs(box, { cpus: context.cpus.server });
  let store: LmdbStore | undefined;
  try {
    store = await openAirsLmdbStore(box.dataDir);
    const follower: LogFollower = lmdbFollower(store);
    // Every request's prompt opens with its group: prompts of one group share their first 2,000 characters.
    const body = (id: string) =>
      JSON.stringify({ model: id, prompt: `group {{g}} ${'x'.repeat(1_990)} request {{i}}` });

    /** Follows the log from `fromSeq` until `expected` requests have settled; the last one's time. */
    const follow = async (fromSeq: number, expected: number, deadline: number) => {
      let completed = 0;
      let failed = 0;
      let lastAt = 0;
      let next = fromSeq;
      while (performance.now() < deadline) {
        for (const event of await follower.read(next)) {
          next = event.seq + 1;
          if (event.type === 'RequestCompleted') completed++;
          else if (event.type === 'RequestFailed') failed++;
          else continue;
          lastAt = Math.max(lastAt, event.at);
        }
        if (completed + failed >= expected) return { completed, failed, lastAt };
        await sleep(follower.pauseMs);
      }
      throw new Error(`fleet: only ${completed + failed} of ${expected} requests settled within the bound`);
    };

    const runOnce = async (id: string, requests: number, during?: (startedAt: number) => Promise<void>) => {
      const from = (await follower.lastSeq()) + 1;
      const since = Date.now();
      const meter = startCpuMeter(() => processTree(airs.child.pid));
      const loading = runLoad(
        {
          url: airs.url,
          method: 'POST',
          path: '/v1/ai',
          headers: authHeaders(credentials.key, true),
          numberedBody: body(id),
          groups: sizes.groups,
          connections: sizes.clients,
          amount: requests,
        },
        context.cpus.load,
        sizes.timeoutSec * 1000,
      );
      const side = during?.(since);
      const load = await loading;
      if (load.non2xx > 0 || load.errors > 0)
        throw new Error(`fleet: airs answered ${load.non2xx} non-2xx and ${load.errors} errors`);
      const settled = await follow(from, requests, performance.now() + sizes.timeoutSec * 1000);
      await side;
      const cpu = meter.read();
      const seconds = (settled.lastAt - load.startedAt) / 1000;
      return {
        model: id,
        requests,
        completed: settled.completed,
        failed: settled.failed,
        seconds: round(seconds, 3),
        rps: Math.round(requests / seconds),
        cpuUsPerRequest: microsPer(cpu, requests),
        since,
      } satisfies Run;
    };

    for (const id of ['single', 'four', 'failing']) {
      context.log(`  warm-up: ${sizes.warmup} requests on ${id}`);
      await runOnce(id, sizes.warmup);
    }
    const runs: Record<string, Run[]> = { single: [], four: [], failing: [] };
    for (let round_ = 0; round_ < sizes.rounds; round_++)
      for (const id of ['single', 'four', 'failing']) {
        const run = await runOnce(id, sizes.requests);
        runs[id]?.push(run);
        context.log(
          `  ${id}: ${run.requests} in ${run.seconds} s (${run.rps}/s), ${run.completed} completed, ${run.failed} failed, CPU ${run.cpuUsPerRequest} µs/req`,
        );
      }
    const rpsOf = (id: string) => median((runs[id] ?? []).map((run) => run.rps));
    const single = rpsOf('single');
    const fourRatio = ratio(rpsOf('four'), single);
    const failingRatio = ratio(rpsOf('failing'), single);
    const failingRuns = runs.failing ?? [];
    const failingCompleted = failingRuns.reduce((sum, run) => sum + run.completed, 0);
    const failingFailed = failingRuns.reduce((sum, run) => sum + run.failed, 0);
    const stats = (
      await ask<{ id: number; ok: true; stats: { name: string; errors: number; maxInFlight: number }[] }>({
        type: 'stats',
      })
    ).stats;
    const g3Errors = stats.find((one) => one.name === 'g3')?.errors ?? 0;
    const overFilled = stats.filter((one) => one.maxInFlight > (one.name === 'single' ? 32 : 8)).map((one) => one.name);

    // The flood's affinity share (the last round of `four`), then a light load: waves of one request per group.
    const lastFour = (runs.four ?? []).at(-1);
    const floodGroups = await ask<{ id: number; ok: true; groups: Record<string, Record<string, number>> }>({
      type: 'groups',
      names: sets.four,
      since: lastFour?.since ?? 0,
    });
    const probeSince = Date.now();
    for (let wave = 0; wave < sizes.probeWaves; wave++) {
      const ids = await Promise.all(
        Array.from({ length: sizes.groups }, async (_, group) => {
          const answer = await call(airs.url, 'POST', '/v1/ai', credentials.key, {
            model: 'four',
            prompt: `group ${group} ${'x'.repeat(1_990)} probe ${wave}`,
          });
          return String(answer.body.request_id);
        }),
      );
      for (const reqId of ids)
        for (let tries = 0; tries < 200; tries++) {
          const polled = await call(airs.url, 'GET', `/v1/ai?req_id=${reqId}`, credentials.key);
          if (polled.body.status !== 'queued') break;
          await sleep(20);
        }
    }
    const probeGroups = await ask<{ id: number; ok: true; groups: Record<string, Record<string, number>> }>({
      type: 'groups',
      names: sets.four,
      since: probeSince,
    });
    const floodShare = affinityShare(floodGroups.groups);
    const lightShare = affinityShare(probeGroups.groups);
    context.log(`  affinity share: ${lightShare} under light load, ${floodShare} under the flood`);

    // One replica dies a third of the way into a flood: from then on each call's connection is reset.
    let deathAt = 0;
    const expectedMs = (sizes.requests / (32 * (1000 / Math.max(1, sizes.delayMs)))) * 1000;
    const death = await runOnce('dying', sizes.requests, async () => {
      await sleep(expectedMs / 3);
      deathAt =
        (
          await ask<{ id: number; ok: true; at?: number }>({
            type: 'set',
            name: 'd3',
            behaviour: { resetConnections: true },
          })
        ).at ?? Date.now();
    });
    const left = deathAt + firstCooldownMs - 500 - Date.now();
    if (left > 0) await sleep(left);
    const { times } = await ask<{ id: number; ok: true; times: readonly number[] }>({
      type: 'callTimes',
      name: 'd3',
      since: deathAt,
    });
    const beforeCooldown = times.filter((at) => at < deathAt + firstCooldownMs - 500);
    const lastCallMs = beforeCooldown.length === 0 ? 0 : Math.max(...beforeCooldown) - deathAt;
    context.log(
      `  death: the last call ${lastCallMs} ms after it (${beforeCooldown.length} calls after it, ${times.length - beforeCooldown.length} later trials); ${death.completed} completed, ${death.failed} failed`,
    );

    notes.push(
      `Fleet: ${sizes.requests} requests per run from ${sizes.clients} clients (POST /v1/ai, prompts of 2,000+ characters in ${sizes.groups} prefix groups), ${sizes.rounds} rounds of single, four, failing in turn after a warm-up of ${sizes.warmup} on each; every fake replica answers after ${sizes.delayMs} ms; the replicas run in a child process of their own; completion read from the log; the median run of each is compared.`,
      `Fleet: replicas above their places in any run: ${overFilled.length === 0 ? 'none' : overFilled.join(', ')} (counted by the replicas).`,
    );
    const rows: Row[] = [
      {
        scenario: 'Fleet: 4 replicas x 8 places vs 1 upstream x 32, end to end',
        target: `>= ${fourFloor} x`,
        measured: `${fourRatio.toFixed(2)} x`,
        detail: `4 replicas ${rpsOf('four')}/s, 1 upstream ${single}/s`,
        met: context.options.smoke ? null : fourRatio >= fourFloor,
      },
      {
        scenario: 'Fleet: one of the 4 answers 500 to half its calls',
        target: `100 % complete, >= ${failingFloor} x`,
        measured: `${failingRatio.toFixed(2)} x, ${failingCompleted} completed, ${failingFailed} failed`,
        detail: `${rpsOf('failing')}/s; the failing replica answered ${g3Errors} calls 500`,
        met: context.options.smoke ? null : failingFailed === 0 && failingRatio >= failingFloor,
      },
      {
        scenario: "Fleet: a replica's death (connections reset) to the last call sent to it",
        target: 'none (reported)',
        measured: `${lastCallMs} ms`,
        detail: `${beforeCooldown.length} calls after its death, ${times.length - beforeCooldown.length} trial calls after the cool-down; that run ${death.completed} completed, ${death.failed} failed`,
        met: null,
      },
      {
        scenario: 'Fleet: affinity share (calls on their prefix group’s replica)',
        target: 'none (reported)',
        measured: `${lightShare} light load`,
        detail: `${floodShare} under the flood (load evens out what affinity would pile up)`,
        met: null,
      },
      {
        scenario: 'Fleet: server CPU per request',
        target: 'none (reported)',
        measured: `${round(median((runs.four ?? []).map((run) => run.cpuUsPerRequest)), 1)} µs (4 replicas)`,
        detail: `1 upstream ${round(median((runs.single ?? []).map((run) => run.cpuUsPerRequest)), 1)} µs, with 500s ${round(median(failingRuns.map((run) => run.cpuUsPerRequest)), 1)} µs`,
        met: null,
      },
    ];
    const figures: Figure[] = [
      { key: 'fleet.single.rps', label: 'fleet 1 upstream: req/s', value: single, better: 'higher' },
      { key: 'fleet.four.rps', label: 'fleet 4 replicas: req/s', value: rpsOf('four'), better: 'higher' },
      { key: 'fleet.four.ratio', label: 'fleet 4 replicas / 1 upstream', value: fourRatio, better: 'higher' },
      { key: 'fleet.failing.ratio', label: 'fleet with 500s / 1 upstream', value: failingRatio, better: 'higher' },
      { key: 'fleet.deathMs', label: 'fleet: death to last call (ms)', value: lastCallMs, better: 'lower' },
      { key: 'fleet.affinity', label: 'fleet: affinity share, light load', value: lightShare, better: 'higher' },
    ];
    return {
      name: 'fleet',
      rows,
      notes,
      figures,
      details: {
        runs,
        death: { ...death, deathAt, lastCallMs, callsAfter: times.length, beforeCooldown: beforeCooldown.length },
        affinity: { light: probeGroups.groups, flood: floodGroups.groups, lightShare, floodShare },
        replicas: stats,
      },
    };
  } finally {
    await store?.close();
    await airs.child.stop('SIGTERM', 20_000);
    await replicasProcess.stop('SIGTERM', 5_000);
  }
};
