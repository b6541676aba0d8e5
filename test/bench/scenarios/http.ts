/**
 * POST and GET on /v1/ai: airs against a bare node:http server with fixed bodies, both started in this run on the
 * server CPUs, loaded by autocannon from its own process on the load CPUs, rounds interleaved (A B A B ...).
 * Before every round the airs process must be idle, so that work left from its previous round (processing the
 * requests a POST round queued) never runs into the next measurement, its own or the bare server's.
 */
import { authHeaders, call, completedRequest, createAccountWithKey, sandbox, startAirs } from '../airs.js';
import { type Context, type Figure, profileFlags, type Row, type ScenarioResult } from '../context.js';
import { type CpuMeter, type CpuUse, microsPer, processTree, startCpuMeter } from '../cpuTime.js';
import { type LoadResult, type LoadSpec, runLoad } from '../load.js';
import { script } from '../paths.js';
import { type Child, startChild } from '../processes.js';
import { waitForIdleAll } from '../procfs.js';
import { median, ratio, round } from '../stats.js';

type Kind = 'post' | 'get';

const targets = {
  // Issue 8's floors (what "resolved" means); the team aims at POST 0.60 x and GET 0.80 x beyond them.
  post: { minRatio: 0.35, maxP99Ms: 10, label: 'POST /v1/ai (durable 202)' },
  get: { minRatio: 0.7, maxP99Ms: 5, label: 'GET /v1/ai (completed request)' },
} as const;

/** A bare node:http server (bareServer.ts) on a free port of 127.0.0.1, pinned to `cpus`. */
export const startBare = async (cpus: string | undefined) => {
  const child = startChild('bare node:http', process.execPath, [script('bareServer')], {
    cpus,
    env: { ...process.env, PORT: '0' },
  });
  const match = await child.waitFor(/bare listening on (http:\/\/\S+?)\/?\s/, 15_000);
  return { child, url: match[1] as string };
};

/** One server (or several loaded at once, the load split between them) in the interleaved rounds. */
export type RoundSide<Name extends string = string> = {
  readonly name: Name;
  readonly specs: readonly LoadSpec[];
  /** The server's processes, whose CPU time each round measures (from its first request to its last answer). */
  readonly cpuOf?: () => readonly number[];
  /**
   * Awaited after each round with the CPU meter still running, so that `cpuDrained` also holds the work the round
   * left behind (POST: processing the requests it queued).
   */
  readonly drain?: () => Promise<void>;
};

/** A round's load, with the server's CPU time over it where the side names its processes. */
export type RoundResult = LoadResult & { readonly cpu?: CpuUse; readonly cpuDrained?: CpuUse };

/** Several loads at once (one per node of a side) as one result: requests and rates added, latencies the worst. */
const combine = (results: readonly LoadResult[]): LoadResult => {
  if (results.length === 1) return results[0] as LoadResult;
  const sum = (pick: (r: LoadResult) => number) => results.reduce((n, r) => n + pick(r), 0);
  const worst = (pick: (r: LoadResult) => number) => Math.max(...results.map(pick));
  const statusCodes: Record<string, number> = {};
  for (const r of results)
    for (const [code, count] of Object.entries(r.statusCodes)) statusCodes[code] = (statusCodes[code] ?? 0) + count;
  return {
    startedAt: Math.min(...results.map((r) => r.startedAt)),
    finishedAt: worst((r) => r.finishedAt),
    requests: sum((r) => r.requests),
    seconds: worst((r) => r.seconds),
    rps: round(
      sum((r) => r.rps),
      1,
    ),
    latencyMs: {
      p50: worst((r) => r.latencyMs.p50),
      p90: worst((r) => r.latencyMs.p90),
      p99: worst((r) => r.latencyMs.p99),
      max: worst((r) => r.latencyMs.max),
      mean: round(
        sum((r) => r.latencyMs.mean * r.requests) /
          Math.max(
            1,
            sum((r) => r.requests),
          ),
        3,
      ),
    },
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    timeouts: sum((r) => r.timeouts),
    statusCodes,
  };
};

/**
 * The method of the HTTP scenarios: a warm-up of each side (if any), then `rounds` x (each side in turn), each round
 * after `settle` (waiting for the servers to be idle). A side of several servers is loaded on all at once, the
 * connections split between them. Logs each round; returns every round's result by side.
 */
export const interleavedRounds = async <Name extends string>(
  context: Context,
  sides: readonly RoundSide<Name>[],
  settle: () => Promise<void>,
  options: {
    /** Runs each turn of a side (its warm-up, each of its rounds): to start a server before it and stop it after. */
    readonly around?: (side: RoundSide<Name>, turn: () => Promise<void>) => Promise<void>;
  } = {},
): Promise<Record<Name, RoundResult[]>> => {
  const { sizes } = context.options;
  const measure = async (side: RoundSide<Name>, durationSec: number) => {
    let result: RoundResult | undefined;
    const turn = async () => {
      await settle();
      // The meter starts as the first load is handed to the generator (whose own start-up is not measured).
      let meter: CpuMeter | undefined;
      const { cpuOf } = side;
      const onSend = cpuOf === undefined ? undefined : () => (meter ??= startCpuMeter(cpuOf));
      const load = combine(
        await Promise.all(
          side.specs.map((spec) => runLoad({ ...spec, durationSec }, context.cpus.load, undefined, onSend)),
        ),
      );
      const cpu = meter?.read();
      if (meter === undefined || side.drain === undefined) result = cpu === undefined ? load : { ...load, cpu };
      else {
        await side.drain();
        result = { ...load, cpu, cpuDrained: meter.read() } as RoundResult;
      }
    };
    await (options.around === undefined ? turn() : options.around(side, turn));
    if (result === undefined) throw new Error(`no result for ${side.name}`);
    return result;
  };
  if (sizes.http.warmupSec > 0) {
    context.log(`  warm-up: ${sizes.http.warmupSec} s each`);
    for (const side of sides) await measure(side, sizes.http.warmupSec);
  }
  const rounds = Object.fromEntries(sides.map((side) => [side.name, [] as RoundResult[]])) as Record<
    Name,
    RoundResult[]
  >;
  const width = Math.max(...sides.map((side) => side.name.length));
  for (let round = 1; round <= sizes.http.rounds; round++) {
    for (const side of sides) {
      const result = await measure(side, sizes.http.roundSec);
      rounds[side.name].push(result);
      context.log(
        `  round ${round} ${side.name.padEnd(width)} ${Math.round(result.rps).toString().padStart(6)} req/s  p99 ${result.latencyMs.p99} ms${result.cpu === undefined ? '' : `  CPU ${microsPer(result.cpu, result.requests)} µs/req`}${result.cpuDrained === undefined ? '' : ` (${microsPer(result.cpuDrained, result.requests)} with what it left)`}${result.non2xx + result.errors > 0 ? `  non-2xx ${result.non2xx} errors ${result.errors}` : ''}`,
      );
    }
  }
  return rounds;
};

/**
 * CPU per request of one side's rounds (µs, medians; NaN where the side was not metered), and where the figures came
 * from (cpuTime.ts).
 */
export const cpuSummary = (results: readonly RoundResult[]) => {
  const perRound = results.map((r) => (r.cpu === undefined ? Number.NaN : microsPer(r.cpu, r.requests)));
  const drainedPerRound = results.map((r) =>
    r.cpuDrained === undefined ? Number.NaN : microsPer(r.cpuDrained, r.requests),
  );
  return {
    usPerRequest: median(perRound),
    drainedUsPerRequest: median(drainedPerRound),
    perRound,
    drainedPerRound,
    /** Share of one CPU the server used during the rounds (medians). */
    cpuShare: round(
      median(results.map((r) => (r.cpu === undefined ? Number.NaN : r.cpu.seconds / r.cpu.wallSeconds))),
      2,
    ),
    sources: [...new Set(results.flatMap((r) => [r.cpu?.source, r.cpuDrained?.source]).filter((s) => s !== undefined))],
  };
};

/** Medians of the rounds of one side. */
export const summarize = (results: readonly LoadResult[]) => ({
  rps: round(median(results.map((r) => r.rps))),
  p50Ms: median(results.map((r) => r.latencyMs.p50)),
  p99Ms: median(results.map((r) => r.latencyMs.p99)),
  non2xx: results.reduce((n, r) => n + r.non2xx, 0),
  errors: results.reduce((n, r) => n + r.errors + r.timeouts, 0),
});

export const httpScenario = async (kind: Kind, context: Context): Promise<ScenarioResult> => {
  const { sizes } = context.options;
  const target = targets[kind];
  const children: Child[] = [];
  try {
    const box = sandbox(context.workDir, kind);
    const credentials = await createAccountWithKey(box);
    const airs = await startAirs(box, {
      cpus: context.cpus.server,
      nodeArgs: profileFlags(context, kind),
      processes: context.options.processes,
    });
    children.push(airs.child);
    const bare = await startBare(context.cpus.server);
    children.push(bare.child);

    const body = JSON.stringify({ model: 'echo', prompt: 'hello' });
    let path = '/v1/ai';
    if (kind === 'get') {
      const reqId = await completedRequest(airs.url, credentials.key);
      path = `/v1/ai?req_id=${encodeURIComponent(reqId)}`;
    } else {
      const first = await call(airs.url, 'POST', path, credentials.key, { model: 'echo', prompt: 'hello' });
      if (first.status !== 202) throw new Error(`POST /v1/ai answered ${first.status}: ${JSON.stringify(first.body)}`);
    }
    const spec = (url: string): LoadSpec => ({
      url,
      method: kind === 'post' ? 'POST' : 'GET',
      path,
      headers: authHeaders(credentials.key, kind === 'post'),
      ...(kind === 'post' ? { body } : {}),
      connections: sizes.connections,
      durationSec: sizes.http.roundSec,
    });
    // Every process of airs (all of them under --processes N), and the bare server: metered, and idle before a round.
    const airsPids = () => processTree(airs.child.pid);
    const idleBound = Math.max(30_000, sizes.http.roundSec * 20_000);
    const untilAirsIdle = async () => {
      const waited = await waitForIdleAll(airsPids, { timeoutMs: idleBound });
      if (!waited.idle) context.log(`  airs still busy after ${waited.waitedMs} ms; measuring anyway`);
    };
    const sides: RoundSide<'airs' | 'bare'>[] = [
      {
        name: 'airs',
        specs: [spec(airs.url)],
        cpuOf: airsPids,
        ...(kind === 'post' ? { drain: untilAirsIdle } : {}),
      },
      { name: 'bare', specs: [spec(bare.url)], cpuOf: () => [bare.child.pid] },
    ];

    const idleWaits: number[] = [];
    const settle = async () => {
      const waited = await waitForIdleAll(() => [...airsPids(), bare.child.pid], { timeoutMs: idleBound });
      idleWaits.push(waited.waitedMs);
      if (!waited.idle) context.log(`  airs still busy after ${waited.waitedMs} ms; measuring anyway`);
    };
    const rounds = await interleavedRounds(context, sides, settle);
    await settle();
    // Stop airs now (SIGTERM: it drains and exits, which also writes its --cpu-prof profile).
    await airs.child.stop('SIGTERM', 20_000);

    const app = summarize(rounds.airs);
    const base = summarize(rounds.bare);
    const appCpu = cpuSummary(rounds.airs);
    const baseCpu = cpuSummary(rounds.bare);
    const throughputRatio = ratio(app.rps, base.rps);
    const pairRatios = rounds.airs.map((r, i) => ratio(r.rps, rounds.bare[i]?.rps ?? Number.NaN));
    const clean = app.non2xx === 0 && app.errors === 0;
    const measured = !context.options.smoke && clean;
    const rows: Row[] = [
      {
        scenario: `${target.label}: throughput`,
        target: `>= ${target.minRatio.toFixed(2)} x bare`,
        measured: `${throughputRatio.toFixed(2)} x`,
        detail: `airs ${app.rps} req/s, bare ${base.rps} req/s (medians of ${sizes.http.rounds})`,
        met: measured ? throughputRatio >= target.minRatio : null,
      },
      {
        scenario: `${target.label}: p99 latency`,
        target: `< ${target.maxP99Ms} ms`,
        measured: `${app.p99Ms} ms`,
        detail: `p50 ${app.p50Ms} ms; bare p99 ${base.p99Ms} ms, p50 ${base.p50Ms} ms`,
        met: measured ? app.p99Ms < target.maxP99Ms : null,
      },
      {
        scenario: `${target.label}: server CPU per request`,
        target: 'none (reported)',
        measured: `${appCpu.usPerRequest} µs`,
        detail: `bare ${baseCpu.usPerRequest} µs (${ratio(appCpu.usPerRequest, baseCpu.usPerRequest)} x); airs rounds ${appCpu.perRound.join(', ')} µs${kind === 'post' ? `; with processing what each round queued ${appCpu.drainedUsPerRequest} µs` : ''}; airs used ${appCpu.cpuShare} of a CPU`,
        met: null,
      },
    ];
    const notes = [
      `${target.label}: ${sizes.connections} connections, ${sizes.http.rounds} round(s) of ${sizes.http.roundSec} s per server${sizes.http.warmupSec > 0 ? ` after a ${sizes.http.warmupSec} s warm-up each` : ''}, interleaved airs/bare; per-round ratios airs/bare ${pairRatios.join(', ')}.`,
      ...(clean
        ? []
        : [
            `${target.label}: airs answered ${app.non2xx} non-2xx and had ${app.errors} errors/timeouts: the figures are not valid.`,
          ]),
      ...(kind === 'post'
        ? [
            `POST: before each round airs was given time to finish processing what earlier rounds queued (waits: ${idleWaits.map((ms) => (ms / 1000).toFixed(1)).join(', ')} s).`,
          ]
        : []),
      `${target.label}: server CPU = user + system time of ${context.options.processes > 1 ? 'every airs process' : 'the airs process'} (all threads) from the round's first request to its last answer, over the round's answers (${[...new Set([...appCpu.sources, ...baseCpu.sources])].join(' and ')}: see cpuTime.ts)${kind === 'post' ? '; "with processing" runs on until airs is idle again' : ''}.`,
    ];
    const figures: Figure[] = [
      { key: `${kind}.airs.rps`, label: `${kind.toUpperCase()} airs: req/s`, value: app.rps, better: 'higher' },
      {
        key: `${kind}.airs.cpuUs`,
        label: `${kind.toUpperCase()} airs: CPU µs/req`,
        value: appCpu.usPerRequest,
        better: 'lower',
      },
      ...(kind === 'post'
        ? [
            {
              key: 'post.airs.cpuUsWithProcessing',
              label: 'POST airs: CPU µs/req with processing',
              value: appCpu.drainedUsPerRequest,
              better: 'lower',
            } as const,
          ]
        : []),
      { key: `${kind}.airs.p99Ms`, label: `${kind.toUpperCase()} airs: p99 ms`, value: app.p99Ms, better: 'lower' },
      {
        key: `${kind}.ratio`,
        label: `${kind.toUpperCase()} airs/bare req/s`,
        value: throughputRatio,
        better: 'higher',
      },
      { key: `${kind}.bare.rps`, label: `${kind.toUpperCase()} bare: req/s`, value: base.rps, better: 'higher' },
      {
        key: `${kind}.bare.cpuUs`,
        label: `${kind.toUpperCase()} bare: CPU µs/req`,
        value: baseCpu.usPerRequest,
        better: 'lower',
      },
    ];
    return {
      name: kind,
      rows,
      notes,
      figures,
      details: {
        airs: { ...app, cpu: appCpu },
        bare: { ...base, cpu: baseCpu },
        ratio: throughputRatio,
        pairRatios,
        rounds,
        idleWaitsMs: idleWaits,
      },
    };
  } finally {
    await Promise.all(children.map((child) => child.stop('SIGTERM', 20_000)));
  }
};
