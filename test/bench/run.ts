/**
 * `npm run bench`: airs against baselines measured side by side in one run (see docs/performance.md).
 *
 *   npm run bench                         the full run (about 20 minutes on 2 CPUs, the pg scenario about 11)
 *   npm run bench -- --smoke              tiny counts (about 30 s), to keep the harness working
 *   npm run bench -- --only=post,get      some scenarios only (post, get, e2e, storage, pg, batch, cores, deepqueue,
 *                                         webhooks, abuse);
 *                                         --cpu-prof profiles the airs servers
 *   npm run bench -- --only=cores         issue 28: airs serve --processes N against N bare servers (a few minutes)
 *   npm run bench -- --only=webhooks      issue 30: end to end with webhook deliveries vs without (--webhook-requests=N)
 *   npm run bench -- --only=abuse         issue 40: the attacks replayed, a bystander measured (about 10 minutes);
 *                                         --only=abuse:uploads,abuse:webhooks runs some of them
 *   npm run bench -- --only=fleet         issue 41: 4 fake replicas vs 1 upstream, with 500s, a death (about 2 minutes)
 *   npm run bench -- --only=tiers         issue 43: priority requests' queue wait under a flood of default and batch work

 *   npm run bench -- --against REV        this build against revision REV's, run after run (A B A B), figure by figure
 *
 * Prints a table and writes test/bench/results/<timestamp>.json. No figure is asserted: a missed target is
 * reported, never a failure. The exit status is non-zero only when a scenario could not run.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runAgainst } from './against.js';
import type { Context, ScenarioResult } from './context.js';
import { pinSelf, planCpus } from './cpus.js';
import { describeMachine } from './machine.js';
import { type Options, parseOptions, type ScenarioName } from './options.js';
import { airsBin, root, setAirsRoot } from './paths.js';
import { installExitHooks, stopAll } from './processes.js';
import { type ProfileSummary, summarizeProfile } from './profile.js';
import { printReport, type RunReport, writeReport } from './report.js';
import { abuseScenario } from './scenarios/abuse.js';
import { batchScenario } from './scenarios/batch.js';
import { coresScenario } from './scenarios/cores.js';
import { deepQueueScenario } from './scenarios/deepQueue.js';
import { endToEndScenario } from './scenarios/endToEnd.js';
import { fleetScenario } from './scenarios/fleet.js';
import { httpScenario } from './scenarios/http.js';
import { pgScenario } from './scenarios/pg.js';
import { storageScenario } from './scenarios/storage.js';
import { tiersScenario } from './scenarios/tiers.js';
import { webhooksScenario } from './scenarios/webhooks.js';

const scenarios: Record<ScenarioName, { title: string; run: (context: Context) => Promise<ScenarioResult> }> = {
  post: { title: 'POST /v1/ai vs bare node:http', run: (c) => httpScenario('post', c) },
  get: { title: 'GET /v1/ai vs bare node:http', run: (c) => httpScenario('get', c) },
  e2e: { title: 'end to end vs BullMQ + Redis', run: endToEndScenario },
  storage: { title: 'replay --verify, start-up and memory with stored requests', run: storageScenario },
  pg: { title: 'airs on PostgreSQL: end to end vs graphile-worker, POST/GET vs LMDB, 2 nodes vs 1', run: pgScenario },
  batch: {
    title: 'a batch of echo chat completions vs the same requests one by one; on PostgreSQL',
    run: batchScenario,
  },
  cores: {
    title: 'airs serve --processes N (N = 1, 2, 4, 8 as the CPUs allow) vs N bare node:http',
    run: coresScenario,
  },
  deepqueue: { title: 'a 100,000-deep queue drained against a shallow one (LMDB)', run: deepQueueScenario },
  webhooks: {
    title: 'end to end with a webhook endpoint on every account vs the same without (LMDB)',
    run: webhooksScenario,
  },
  abuse: {
    title: "issue 40's attacks, each against a fresh server, with a bystander account measured (LMDB)",
    run: abuseScenario,
  },
  fleet: {
    title: 'one model over 4 fake replicas x 8 places vs 1 fake upstream x 32; 500s, a death, affinity (LMDB)',
    run: fleetScenario,
  },
  tiers: {
    title:
      'the queue wait of a trickle of priority requests while default, flex and batch work fill every worker (LMDB)',
    run: tiersScenario,
  },
};

const log = (message: string) => process.stderr.write(`${message}\n`);
// A closed stderr or stdout (`npm run bench | head`) must not end the run before its children are stopped.
process.stderr.on('error', () => {});
process.stdout.on('error', () => {});

/** Summaries of the profiles written by `--cpu-prof` runs (the files stay beside the results). */
const profileSummaries = (dir: string): ProfileSummary[] =>
  readdirSync(dir)
    .filter((file) => file.endsWith('.cpuprofile'))
    .sort()
    .map((file) => summarizeProfile(join(dir, file), 15));

const main = async (options: Options): Promise<number> => {
  if (options.airsRoot !== undefined) setAirsRoot(options.airsRoot);
  if (!existsSync(airsBin())) {
    log(`${airsBin()} is missing: build first (npm run bench builds with tsc)`);
    return 2;
  }
  const startedAt = new Date().toISOString();
  const resultsDir = join(root, 'test', 'bench', 'results');
  const workDir = mkdtempSync(join(tmpdir(), 'airs-bench-'));
  const profileDir = options.cpuProf ? join(resultsDir, `${startedAt.replace(/[:.]/g, '-')}-profiles`) : undefined;
  if (profileDir !== undefined) mkdirSync(profileDir, { recursive: true });
  const cleanUp = async () => {
    await stopAll();
    if (!options.keep) rmSync(workDir, { recursive: true, force: true });
  };
  installExitHooks(cleanUp);
  // Whatever way this process ends, the temporary directory goes too (the children are killed by the hooks).
  process.on('exit', () => {
    if (!options.keep) rmSync(workDir, { recursive: true, force: true });
  });

  const machine = describeMachine();
  const cpus = planCpus();
  pinSelf(cpus.load);
  log(`airs bench (${options.smoke ? 'smoke' : 'full'}): ${options.only.join(', ')}`);
  if (options.airsRoot !== undefined) log(`airs under test: the build in ${options.airsRoot}`);
  log(`${machine.nproc} CPUs (${machine.cpuModel}), node ${machine.node}, load average ${machine.loadAverage}`);
  log(cpus.note);
  const context: Context = { options, cpus, workDir, profileDir, log };

  const results: ScenarioResult[] = [];
  const failures: { scenario: string; error: string }[] = [];
  try {
    for (const name of options.only) {
      const scenario = scenarios[name];
      log(`\n== ${name}: ${scenario.title}`);
      const started = performance.now();
      try {
        const result = await scenario.run(context);
        results.push(result);
        for (const error of result.failures ?? []) failures.push({ scenario: name, error });
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        failures.push({ scenario: name, error: message });
        log(`  FAILED: ${message}`);
        // Whatever the scenario left running goes before the next one starts.
        await stopAll();
      }
      log(`  (${((performance.now() - started) / 1000).toFixed(1)} s)`);
    }
  } finally {
    await cleanUp();
  }

  const report: RunReport = {
    startedAt,
    finishedAt: new Date().toISOString(),
    mode: options.smoke ? 'smoke' : 'full',
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    machine,
    pinning: cpus.note,
    airsRoot: options.airsRoot ?? root,
    scenarios: results,
    failures,
    ...(profileDir === undefined ? {} : { profiles: profileSummaries(profileDir) }),
  };
  printReport(report);
  const path = writeReport(resultsDir, report, options.resultsFile);
  log(`\nresults: ${path}`);
  if (report.profiles !== undefined) log(`profiles: ${profileDir}`);
  if (options.keep) log(`data kept in ${workDir}`);
  return failures.length > 0 ? 1 : 0;
};

const parsed = parseOptions(process.argv.slice(2));
if (typeof parsed === 'string') {
  log(parsed);
  process.exitCode = parsed.startsWith('usage') ? 0 : 2;
} else {
  const { against } = parsed;
  (against === undefined ? main(parsed) : runAgainst({ ...parsed, against }, process.argv.slice(2), log)).then(
    (code) => process.exit(code),
    async (error: unknown) => {
      log(`bench failed: ${error instanceof Error ? error.stack : String(error)}`);
      await stopAll();
      process.exit(1);
    },
  );
}
