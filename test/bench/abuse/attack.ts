/** One attack of `--only=abuse`: what it is, how its server differs from the defaults, and what it measured. */
import type { BystanderFigures } from '../../support/bystander.js';
import type { Context } from '../context.js';
import type { AbuseAttackName } from '../options.js';
import { type Bystander, type Measured, measureAround, startTarget, type Target, type TargetSpec } from './harness.js';

/** The attack's own result against its target (a row of the report). */
export type OutcomeRow = {
  readonly target: string;
  readonly measured: string;
  /** null: reported, no target (or smoke mode). */
  readonly met: boolean | null;
  readonly detail: string;
};

export type AttackResult = {
  readonly name: AbuseAttackName;
  readonly title: string;
  /** How the server and the accounts were set up (what differs from the defaults, and why). */
  readonly setup: string;
  /** The bystander quiet and during the attack; absent for the checks, which are not loads. */
  readonly bystander?: { readonly quiet: BystanderFigures; readonly attack: BystanderFigures };
  readonly dataFileBefore: number;
  readonly dataFileAfter: number;
  /** The bound on the data file's growth (the attackers' storage quota, or what the check allows). */
  readonly growthBoundBytes: number;
  readonly growthBoundName: string;
  /** The bound on the server's anonymous memory during the attack. */
  readonly anonBoundMiB: number;
  readonly errorLines: number;
  readonly attackSeconds: number;
  readonly outcome: OutcomeRow;
  /** The driver's own figures, for the JSON file. */
  readonly details: unknown;
};

/** The server's anonymous memory (RssAnon) must stay under this during every attack: the quiet server uses ~70 MiB. */
export const anonBoundMiB = 512;

export type AttackSpec<T> = TargetSpec & {
  readonly name: AbuseAttackName;
  readonly title: string;
  readonly setup: string;
  readonly growthBoundBytes: number;
  readonly growthBoundName: string;
  /** Runs before the bystander's quiet watch: what the attacker sets up in advance (not measured). */
  readonly prepare?: (target: Target) => Promise<unknown>;
  readonly attack: (target: Target, prepared: unknown) => Promise<T>;
  /** Runs once the server has stopped, with what `prepare` gave (receivers to close, say). */
  readonly cleanUp?: (prepared: unknown) => Promise<void>;
  /** The row of the attack's own result, from its outcome, the measurements and what `prepare` gave. */
  readonly outcome: (outcome: T, measured: Measured<T>, prepared: unknown) => OutcomeRow;
};

/** Starts the attack's server, prepares, measures the bystander quiet and during the attack, and stops the server. */
export const runAttack = async <T>(
  context: Context,
  bystander: Bystander,
  spec: AttackSpec<T>,
): Promise<AttackResult> => {
  const target = await startTarget(context, spec);
  let prepared: unknown;
  try {
    if (spec.prepare !== undefined) {
      const started = performance.now();
      prepared = await spec.prepare(target);
      context.log(`    prepared in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    }
    const measured = await measureAround(context, bystander, target, () => spec.attack(target, prepared));
    context.log(`    the attack ran ${measured.attackSeconds.toFixed(1)} s`);
    return {
      name: spec.name,
      title: spec.title,
      setup: spec.setup,
      bystander: { quiet: measured.quiet, attack: measured.attack },
      dataFileBefore: measured.dataFileBefore,
      dataFileAfter: measured.dataFileAfter,
      growthBoundBytes: spec.growthBoundBytes,
      growthBoundName: spec.growthBoundName,
      anonBoundMiB,
      errorLines: measured.errorLines,
      attackSeconds: measured.attackSeconds,
      outcome: spec.outcome(measured.outcome, measured, prepared),
      details: { prepared, outcome: measured.outcome },
    };
  } finally {
    await target.stop();
    await spec.cleanUp?.(prepared);
  }
};

export type CheckSpec<T> = TargetSpec & {
  readonly name: AbuseAttackName;
  readonly title: string;
  readonly setup: string;
  readonly growthBoundBytes: number;
  readonly growthBoundName: string;
  /** Runs on a first server of the same data directory, before the checked one starts (null: none). */
  readonly before?: { readonly config: Record<string, unknown>; readonly run: (target: Target) => Promise<unknown> };
  readonly check: (target: Target, before: unknown) => Promise<T>;
  readonly outcome: (outcome: T) => OutcomeRow;
};

/**
 * A check, not a load: its server, the check's calls and their answers; no bystander. `before` runs first on a
 * server of the same data directory with another config (a file uploaded before the disk floor is set, say).
 */
export const runCheck = async <T>(context: Context, spec: CheckSpec<T>): Promise<AttackResult> => {
  let first: Target | undefined;
  let before: unknown;
  if (spec.before !== undefined) {
    first = await startTarget(context, { ...spec, config: spec.before.config });
    try {
      before = await spec.before.run(first);
    } finally {
      await first.stop();
    }
  }
  const target = await startTarget(context, spec, first);
  try {
    const dataFileBefore = target.dataFileBytes();
    const errorsBefore = target.errorLines();
    const started = performance.now();
    const outcome = await spec.check(target, before);
    // The server's log lines of the check arrive on its stdout a moment after the answers.
    await new Promise((resolve) => setTimeout(resolve, 200));
    return {
      name: spec.name,
      title: spec.title,
      setup: spec.setup,
      dataFileBefore,
      dataFileAfter: target.dataFileBytes(),
      growthBoundBytes: spec.growthBoundBytes,
      growthBoundName: spec.growthBoundName,
      anonBoundMiB,
      errorLines: target.errorLines() - errorsBefore,
      attackSeconds: (performance.now() - started) / 1000,
      outcome: spec.outcome(outcome),
      details: { before, outcome },
    };
  } finally {
    await target.stop();
  }
};

/** Statuses counted, as a short text (`200 x5, 429 x5`). */
export const statusCounts = (counts: Readonly<Record<string, number>>): string =>
  Object.entries(counts)
    .map(([status, n]) => `${status} x${n}`)
    .join(', ') || 'none';

export const mib = (bytes: number) => bytes / 1024 ** 2;

/** `3 free accounts`, `1 free account`, `2 batches`. */
export const counted = (n: number, what: string, plural = `${what}s`) =>
  `${n.toLocaleString('en')} ${n === 1 ? what : plural}`;
