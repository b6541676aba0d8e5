/**
 * `npm run bench -- --against REV`: this checkout's build (A) against revision REV's (B), in one sitting.
 *
 * REV is checked out in a temporary `git worktree` and built there with its own `npm run build`; it shares this
 * checkout's `node_modules` (a symlink) when the two `package-lock.json` are the same, else gets its own `npm ci`.
 * Then whole bench runs alternate, A B A B ... (`--rounds` of each): each is this checkout's bench
 * (`dist/test/bench/run.js`, the same harness and baselines for both) with `--airs-root` naming the build under
 * test, so only airs differs. Each run's JSON is kept; the figures every scenario publishes (rates, CPU per request)
 * are compared by compare.ts. The worktree is removed at the end (kept with `--keep`).
 */
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Build, type BuildRun, compareRuns, comparisonTable } from './compare.js';
import type { ScenarioResult } from './context.js';
import { describeMachine } from './machine.js';
import type { Options } from './options.js';
import { root, script } from './paths.js';
import { installExitHooks, runChild, startChild, stopAll } from './processes.js';
import type { RunReport } from './report.js';

const git = (args: readonly string[], cwd = root) =>
  execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

/** The options of each run: the caller's, less those of the comparison itself. */
const runArgs = (argv: readonly string[]): string[] => {
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--against') i++;
    else if (!/^--(against|rounds|airs-root|results|only)=/.test(arg)) args.push(arg);
  }
  return args;
};

/** A build of REV in a temporary worktree, ready to serve; `remove` takes the worktree away. */
const prepareOther = async (sha: string, log: (message: string) => void) => {
  const dir = mkdtempSync(join(tmpdir(), `airs-against-${sha.slice(0, 8)}-`));
  git(['worktree', 'add', '--detach', dir, sha]);
  const remove = () => {
    try {
      git(['worktree', 'remove', '--force', dir]);
    } catch {
      rmSync(dir, { recursive: true, force: true });
      git(['worktree', 'prune']);
    }
  };
  try {
    const lock = (checkout: string) => {
      const path = join(checkout, 'package-lock.json');
      return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
    };
    if (lock(root) !== undefined && lock(root) === lock(dir)) {
      symlinkSync(realpathSync(join(root, 'node_modules')), join(dir, 'node_modules'));
      log(`  the lock files are the same: ${dir} uses this checkout's node_modules`);
    } else {
      log(`  the lock files differ: npm ci in ${dir} (minutes)`);
      const installed = await runChild('npm ci', 'npm', ['ci', '--no-audit', '--no-fund'], {
        cwd: dir,
        timeoutMs: 30 * 60_000,
      });
      if (installed.exit.code !== 0) throw new Error(`npm ci failed in ${dir}: ${installed.stderr.slice(-2000)}`);
    }
    log(`  building ${sha.slice(0, 8)} (npm run build in ${dir})`);
    const built = await runChild('npm run build', 'npm', ['run', 'build'], { cwd: dir, timeoutMs: 20 * 60_000 });
    if (built.exit.code !== 0)
      throw new Error(`npm run build failed for ${sha}: ${(built.stdout + built.stderr).slice(-3000)}`);
    if (!existsSync(join(dir, 'dist', 'src', 'adapters', 'cli', 'bin.js')))
      throw new Error(`the build of ${sha} has no dist/src/adapters/cli/bin.js`);
    return { dir, remove };
  } catch (error) {
    remove();
    throw error;
  }
};

/** One whole bench run of one build; its output goes to stderr, line by line, behind `[A1]`. */
const runOnce = async (label: string, args: readonly string[], log: (message: string) => void) => {
  const child = startChild(`bench ${label}`, process.execPath, [script('run'), ...args]);
  let pending = '';
  const relay = (chunk: string) => {
    const lines = (pending + chunk).split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) log(`[${label}] ${line}`);
  };
  child.process.stdout?.on('data', relay);
  child.process.stderr?.on('data', relay);
  const exit = await child.exited;
  if (pending !== '') log(`[${label}] ${pending}`);
  return exit;
};

export const runAgainst = async (
  options: Options & { readonly against: string },
  argv: readonly string[],
  log: (message: string) => void,
): Promise<number> => {
  const startedAt = new Date().toISOString();
  let sha: string;
  try {
    sha = git(['rev-parse', '--verify', '--quiet', `${options.against}^{commit}`]);
  } catch {
    log(`--against: ${options.against} is not a commit of this repository`);
    return 2;
  }
  const head = git(['rev-parse', 'HEAD']);
  // What the build of airs reads: a change elsewhere (docs, the bench) leaves the airs under test HEAD's.
  const dirty =
    git(['status', '--porcelain', '--', 'src', 'package.json', 'package-lock.json', 'tsconfig.json']) !== '';
  const labelA = `this checkout (${head.slice(0, 8)}${dirty ? ' with uncommitted changes to src' : ''})`;
  const labelB = `${options.against} (${sha.slice(0, 8)})`;
  log(`airs bench --against: A = ${labelA}, B = ${labelB}; ${options.only.join(', ')}; ${options.rounds} runs each`);

  const runsDir = join(root, 'test', 'bench', 'results', `${startedAt.replace(/[:.]/g, '-')}-against`);
  mkdirSync(runsDir, { recursive: true });
  let other: Awaited<ReturnType<typeof prepareOther>> | undefined;
  const cleanUp = async () => {
    await stopAll();
    if (other !== undefined && !options.keep) other.remove();
  };
  installExitHooks(cleanUp);
  const runs: (BuildRun & { readonly file: string; readonly exit: number | string })[] = [];
  const failures: string[] = [];
  try {
    other = await prepareOther(sha, log);
    const roots: Record<Build, string> = { A: root, B: other.dir };
    for (let round = 1; round <= options.rounds; round++) {
      for (const build of ['A', 'B'] as const) {
        const label = `${build}${round}`;
        const file = join(runsDir, `${label}.json`);
        log(`\n== run ${label}: ${build === 'A' ? labelA : labelB}`);
        const args = [
          ...runArgs(argv),
          `--only=${options.only.join(',')}`,
          `--airs-root=${roots[build]}`,
          `--results=${file}`,
        ];
        const exit = await runOnce(label, args, log);
        if (!existsSync(file)) {
          failures.push(`${label}: no result (exit ${exit.code ?? exit.signal})`);
          continue;
        }
        const report = JSON.parse(readFileSync(file, 'utf8')) as RunReport;
        for (const failure of report.failures) failures.push(`${label} ${failure.scenario}: ${failure.error}`);
        runs.push({
          build,
          round,
          figures: report.scenarios.flatMap((s: ScenarioResult) => s.figures ?? []),
          file,
          exit: exit.code ?? String(exit.signal),
        });
      }
    }
  } catch (error) {
    failures.push(error instanceof Error ? error.message : String(error));
  } finally {
    await cleanUp();
  }

  const comparisons = compareRuns(runs);
  const machine = describeMachine();
  const table = comparisons.length > 0 ? comparisonTable(comparisons) : '(no run produced figures)';
  const out = [
    '',
    `airs bench --against (${options.smoke ? 'smoke' : 'full'}) — ${machine.nproc} CPUs, ${machine.cpuModel}, node ${machine.node}`,
    `A = ${labelA}; B = ${labelB}; runs in the order ${runs.map((r) => `${r.build}${r.round}`).join(' ')}`,
    '',
    table,
    '',
    '- Each value is one whole run\'s figure (the median of its rounds for post and get); "A / B" is the ratio of the medians of the runs, "A/B by run" the range of A_i / B_i, "Spread" (max - min) / median of each build\'s runs. "Verdict": every run of one build beats every run of the other, else "overlap".',
    '- CPU per request: user + system time of every airs process (all threads) over the measured window, over the requests answered (test/bench/cpuTime.ts).',
    ...(options.smoke ? ['- smoke mode: tiny counts, the figures say nothing.'] : []),
    ...failures.map((f) => `- FAILED ${f}`),
  ];
  process.stdout.write(`${out.join('\n')}\n`);
  const path = join(runsDir, 'comparison.json');
  writeFileSync(
    path,
    `${JSON.stringify(
      {
        startedAt,
        finishedAt: new Date().toISOString(),
        command: `npm run bench -- ${argv.join(' ')}`,
        machine,
        a: { label: labelA, commit: head, dirty, root },
        b: { label: labelB, commit: sha, revision: options.against },
        runs: runs.map(({ build, round, file, exit }) => ({ build, round, file, exit })),
        comparisons,
        failures,
      },
      null,
      2,
    )}\n`,
  );
  log(`\nresults: ${path} (and each run's beside it)`);
  if (options.keep && other !== undefined) log(`the build of ${sha.slice(0, 8)} kept in ${other.dir}`);
  return failures.length > 0 || runs.length === 0 ? 1 : 0;
};
