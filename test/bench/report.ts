/** The readable table on stdout and the JSON file under test/bench/results/. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Row, ScenarioResult } from './context.js';
import type { Machine } from './machine.js';
import { formatSummary, type ProfileSummary } from './profile.js';

const verdict = (met: boolean | null) => (met === null ? 'n/a' : met ? 'met' : 'MISSED');

export const table = (rows: readonly Row[]): string => {
  const header = ['Scenario', 'Target', 'Measured', 'Result', 'Figures'];
  const lines = rows.map((r) => [r.scenario, r.target, r.measured, verdict(r.met), r.detail]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] as string).length)));
  const fmt = (cells: readonly string[]) =>
    cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] as number))).join('  ');
  return [fmt(header), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(fmt)].join('\n');
};

/** A table laid out in columns, as Markdown (readable as text, and pasted as is into docs/performance.md). */
export const markdownTable = (header: readonly string[], lines: readonly (readonly string[])[]): string => {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? '').length)));
  const fmt = (cells: readonly string[]) =>
    `| ${cells.map((cell, i) => cell.padEnd(widths[i] as number)).join(' | ')} |`;
  return [fmt(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(fmt)].join('\n');
};

export type RunReport = {
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly mode: 'full' | 'smoke';
  readonly command: string;
  readonly machine: Machine;
  readonly pinning: string;
  /** The checkout whose build was measured (this one, or another revision's under `--against`). */
  readonly airsRoot?: string;
  readonly scenarios: readonly ScenarioResult[];
  readonly failures: readonly { readonly scenario: string; readonly error: string }[];
  readonly profiles?: readonly ProfileSummary[];
};

export const printReport = (report: RunReport) => {
  const rows = report.scenarios.flatMap((s) => s.rows);
  const out = [
    '',
    `airs bench (${report.mode}) — ${report.machine.nproc} CPUs, ${report.machine.cpuModel}, node ${report.machine.node}`,
    report.pinning,
    '',
    rows.length > 0 ? table(rows) : '(no scenario produced figures)',
    '',
    ...report.scenarios.flatMap((s) => (s.tables ?? []).flatMap((t) => [t, ''])),
    ...report.scenarios.flatMap((s) => s.notes.map((n) => `- ${n}`)),
    ...report.failures.map((f) => `- FAILED ${f.scenario}: ${f.error}`),
    ...(report.mode === 'smoke' ? ['- smoke mode: tiny counts, the figures say nothing about the targets.'] : []),
    ...(report.profiles ?? []).flatMap((summary) => ['', formatSummary(summary)]),
  ];
  process.stdout.write(`${out.join('\n')}\n`);
};

/** Writes the run as `<dir>/<timestamp>.json` (or to `file`) and returns the path. */
export const writeReport = (dir: string, report: RunReport, file?: string): string => {
  mkdirSync(file === undefined ? dir : dirname(file), { recursive: true });
  const path =
    file ?? join(dir, `${report.startedAt.replace(/[:.]/g, '-')}${report.mode === 'smoke' ? '-smoke' : ''}.json`);
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
  return path;
};
