/** What every scenario gets, and what it gives back. */
import type { CpuPlan } from './cpus.js';
import type { Options, ScenarioName } from './options.js';

export type Context = {
  readonly options: Options;
  readonly cpus: CpuPlan;
  /** Temporary directory of this run (data directories, redis, sample files). */
  readonly workDir: string;
  /** Where `--cpu-prof` profiles go (beside the results), when profiling. */
  readonly profileDir: string | undefined;
  log(message: string): void;
};

/** One line of the table: a target and what this run measured for it. */
export type Row = {
  readonly scenario: string;
  readonly target: string;
  /** The measured figure the target is about, in words. */
  readonly measured: string;
  /** The figures behind it (both sides of a ratio), in words. */
  readonly detail: string;
  /** Whether the target is met; null when this run could not measure it (skipped, smoke, failure). */
  readonly met: boolean | null;
};

/**
 * One figure of a scenario in a form that runs can be compared by (`--against`): the same `key` in every run of
 * the scenario, a number, and which way is better.
 */
export type Figure = {
  readonly key: string;
  /** In words, with the unit: `POST airs: server CPU per request (µs)`. */
  readonly label: string;
  readonly value: number;
  readonly better: 'higher' | 'lower';
};

export type ScenarioResult = {
  readonly name: ScenarioName;
  readonly rows: Row[];
  /** Raw figures of every round, for the JSON file. */
  readonly details: Record<string, unknown>;
  /** How the figures were made and anything unusual, for the report. */
  readonly notes: string[];
  /** Tables of their own (already laid out), printed after the targets. */
  readonly tables?: string[];
  /** Parts of the scenario that could not run (the rest did): reported as failures, as a scenario that threw. */
  readonly failures?: string[];

  /** The figures `--against` compares between two builds (rates, CPU per request). */
  readonly figures?: Figure[];
};

/** The node flags that profile an airs process (the server, or a CLI command) when `--cpu-prof` is given. */
export const profileFlags = (context: Context, label: string, side: 'server' | 'cli' = 'server'): string[] =>
  context.profileDir === undefined
    ? []
    : ['--cpu-prof', `--cpu-prof-dir=${context.profileDir}`, `--cpu-prof-name=${label}-airs-${side}.cpuprofile`];
