/**
 * `--only=abuse` (issue 40): each attack of the issue replayed against a fresh `airs serve` (LMDB, started through the
 * CLI, pinned to the server CPUs), with a bystander account measured by a child process on the load CPUs: its submits
 * to `/v1/ai` and `/healthz`, each every 100 ms, first on the quiet server, then while the attack runs; the server's
 * memory (RSS, and its anonymous part) and CPU from /proc; airs.mdb's size before and after. The attacks are
 * test/support/attacks/ (one file each), their servers and targets test/bench/abuse/. `--only=abuse:NAME` runs some.
 *
 * The floors (issue 40): the bystander's submit p99 during the attack at most 3 x its quiet p99, with every submit
 * accepted; `/healthz` within 100 ms; the server's anonymous memory under a stated bound; airs.mdb growing by no more
 * than the attackers' quota. A missed floor is reported, never a failure.
 */
import type { BystanderFigures } from '../../support/bystander.js';
import { type AttackResult, mib } from '../abuse/attack.js';
import { bigAnswersAttack, largeBatchesAttack, openBatchesAttack, poisonedLinesAttack } from '../abuse/batchAttacks.js';
import { diskFloorCheck, fileListsAttack, malformedFormsCheck, uploadsAttack } from '../abuse/fileAttacks.js';
import { type Bystander, startBystander } from '../abuse/harness.js';
import { webhooksAttack } from '../abuse/webhooksAttack.js';
import type { Context, Row, ScenarioResult } from '../context.js';
import type { AbuseAttackName } from '../options.js';
import { markdownTable } from '../report.js';

const maxRatio = 3;
const maxHealthMs = 100;

const attacks: Record<AbuseAttackName, (context: Context, bystander: Bystander) => Promise<AttackResult>> = {
  'poisoned-lines': poisonedLinesAttack,
  'file-lists': fileListsAttack,
  uploads: uploadsAttack,
  'disk-floor': (context) => diskFloorCheck(context),
  'large-batches': largeBatchesAttack,
  'open-batches': openBatchesAttack,
  webhooks: webhooksAttack,
  'big-answers': bigAnswersAttack,
  'malformed-forms': (context) => malformedFormsCheck(context),
};

const ms = (value: number) => (Number.isFinite(value) ? `${value.toFixed(0)} ms` : '-');
/** The bystander's submits not answered `202` (its `/healthz` failures are counted apart, under `healthz`). */
const refusedOf = (f: BystanderFigures) =>
  Object.entries(f.refused).reduce((sum, [what, n]) => (what === 'healthz' ? sum : sum + n), 0);
const ratioOf = (b: { quiet: BystanderFigures; attack: BystanderFigures }) =>
  b.attack.submitP99Ms / b.quiet.submitP99Ms;

/** The rows of one attack: the bystander's floors (for the loads), the data file, and the attack's own result. */
const rowsOf = (context: Context, r: AttackResult): Row[] => {
  const smoke = context.options.smoke;
  const scenario = `abuse ${r.name}`;
  const growth = r.dataFileAfter - r.dataFileBefore;
  const rows: Row[] = [];
  const b = r.bystander;
  if (b !== undefined) {
    const ratio = ratioOf(b);
    const refused = refusedOf(b.attack);
    rows.push(
      {
        scenario,
        target: `bystander submit p99 <= ${maxRatio} x quiet, every submit 202`,
        measured: `${ratio.toFixed(1)} x${refused > 0 ? `, ${refused} refused` : ''}`,
        met: smoke ? null : ratio <= maxRatio && refused === 0,
        detail: `quiet p99 ${ms(b.quiet.submitP99Ms)} (p50 ${ms(b.quiet.submitP50Ms)}); attack p99 ${ms(b.attack.submitP99Ms)} (p50 ${ms(b.attack.submitP50Ms)}, max ${ms(b.attack.submitMaxMs)}), ${b.attack.submits} submits, not 202: ${JSON.stringify(b.attack.refused)}`,
      },
      {
        scenario,
        target: `/healthz within ${maxHealthMs} ms`,
        measured: `max ${ms(b.attack.healthMaxMs)}, p99 ${ms(b.attack.healthP99Ms)}`,
        met: smoke ? null : b.attack.healthMaxMs <= maxHealthMs,
        detail: `quiet max ${ms(b.quiet.healthMaxMs)}, p99 ${ms(b.quiet.healthP99Ms)}; ${b.attack.healthChecks} checks`,
      },
      {
        scenario,
        target: `server anonymous memory <= ${r.anonBoundMiB} MiB`,
        measured: `${b.attack.anonPeakMiB.toFixed(0)} MiB`,
        met: smoke ? null : b.attack.anonPeakMiB <= r.anonBoundMiB,
        detail: `RSS peak ${b.attack.rssPeakMiB.toFixed(0)} MiB (quiet: anonymous ${b.quiet.anonPeakMiB.toFixed(0)}, RSS ${b.quiet.rssPeakMiB.toFixed(0)}); CPU ${(b.attack.cpuShare * 100).toFixed(0)} % of a core (quiet ${(b.quiet.cpuShare * 100).toFixed(0)} %) over ${r.attackSeconds.toFixed(0)} s`,
      },
    );
  }
  rows.push(
    {
      scenario,
      target: `airs.mdb growth <= ${r.growthBoundName}`,
      measured: `+${mib(growth).toFixed(0)} MiB`,
      met: smoke ? null : growth <= r.growthBoundBytes,
      detail: `${mib(r.dataFileBefore).toFixed(0)} -> ${mib(r.dataFileAfter).toFixed(0)} MiB`,
    },
    {
      scenario,
      target: r.outcome.target,
      measured: r.outcome.measured,
      met: r.outcome.met,
      detail: `${r.outcome.detail}; ${r.errorLines} error lines logged`,
    },
  );
  return rows;
};

/** One line per attack, as Markdown (for docs/performance.md). */
const summaryTable = (results: readonly AttackResult[]): string =>
  markdownTable(
    [
      'Attack',
      'Bystander submit p99: quiet, attack',
      'Ratio',
      'Not 202',
      '/healthz max (p99)',
      'Anon. peak (RSS)',
      'CPU',
      'airs.mdb growth',
      'Outcome',
    ],
    results.map((r) => {
      const b = r.bystander;
      const growth = `+${mib(r.dataFileAfter - r.dataFileBefore).toFixed(0)} MiB`;
      return b === undefined
        ? [r.title, '-', '-', '-', '-', '-', '-', growth, r.outcome.measured]
        : [
            r.title,
            `${ms(b.quiet.submitP99Ms)}, ${ms(b.attack.submitP99Ms)}`,
            `${ratioOf(b).toFixed(1)} x`,
            String(refusedOf(b.attack)),
            `${ms(b.attack.healthMaxMs)} (${ms(b.attack.healthP99Ms)})`,
            `${b.attack.anonPeakMiB.toFixed(0)} MiB (${b.attack.rssPeakMiB.toFixed(0)} MiB)`,
            `${(b.attack.cpuShare * 100).toFixed(0)} %`,
            growth,
            r.outcome.measured,
          ];
    }),
  );

export const abuseScenario = async (context: Context): Promise<ScenarioResult> => {
  const results: AttackResult[] = [];
  const failures: string[] = [];
  const rows: Row[] = [];
  const bystander = await startBystander(context);
  try {
    for (const name of context.options.abuseAttacks) {
      const started = performance.now();
      context.log(`  abuse ${name}`);
      try {
        // Each attack stops its server and whatever it started, whatever happened.
        const result = await attacks[name](context, bystander);
        results.push(result);
        const attackRows = rowsOf(context, result);
        rows.push(...attackRows);
        for (const row of attackRows)
          context.log(
            `    ${row.target}: ${row.measured} (${row.met === null ? 'n/a' : row.met ? 'met' : 'floor missed'})`,
          );
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        failures.push(`abuse ${name}: ${message}`);
        rows.push({
          scenario: `abuse ${name}`,
          target: 'the attack runs',
          measured: 'could not run',
          met: null,
          detail: message.slice(0, 300),
        });
        context.log(`    FAILED: ${message}`);
      }
      context.log(`    (${((performance.now() - started) / 1000).toFixed(0)} s)`);
    }
  } finally {
    await bystander.close();
  }
  return report(context, results, rows, failures);
};

const report = (
  context: Context,
  results: readonly AttackResult[],
  rows: Row[],
  failures: readonly string[],
): ScenarioResult => ({
  name: 'abuse',
  rows,
  tables: [summaryTable(results)],
  failures: [...failures],
  notes: [
    `abuse: each attack against a fresh airs serve (LMDB, started with the CLI, on the server CPU), accounts, keys and webhook endpoints made by the CLI's own code (its management layer) in the bench process: the bystander on the enterprise plan (its limits never in its way), the attackers on the plan each attack names. The bystander (a child process on the load CPU) submits {"model":"echo"} to /v1/ai and asks /healthz, each every 100 ms: ${context.options.sizes.abuse.quietSec} s on the quiet server (after a 1 s warm-up), then throughout the attack; memory is VmRSS and RssAnon sampled every 200 ms, CPU the server's user + system time over the window. A refused submit (not 202) misses the floor whatever its time.`,
    ...results.map((r) => `abuse ${r.name}: ${r.title}; ${r.setup}.`),
  ],
  details: { attacks: results },
});
