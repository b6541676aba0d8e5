import type { Command } from 'commander';
import type { UsageBucket, UsageGroupBy } from '../../domain/usage/usagePage.js';
import { configOrFail, dataDirNote, requireDatabase, type StoreOptions, withStoreOptions } from './context.js';
import { CliError, emit, type Output } from './output.js';

// Every module here that is not a type is loaded on use (see context.ts): `airs --help` starts without effect or lmdb.

type UsageOptions = StoreOptions & {
  readonly since: string;
  readonly until?: string;
  readonly groupBy?: string;
  readonly bucket?: string;
  readonly account?: string[];
  readonly model?: string[];
  readonly csv?: boolean;
  readonly json?: boolean;
};

/** A time given as Unix seconds or an ISO 8601 date or date-time (UTC when it names no zone), in ms. */
export const timeOf = (flag: string, value: string): number => {
  const trimmed = value.trim();
  if (/^\d{1,12}$/.test(trimmed)) return Number(trimmed) * 1000;
  const iso = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?)?(Z|[+-]\d{2}:\d{2})?$/.exec(trimmed);
  const ms =
    iso === null ? Number.NaN : Date.parse(iso[4] === undefined && iso[1] !== undefined ? `${trimmed}Z` : trimmed);
  if (!Number.isFinite(ms) || ms < 0)
    throw new CliError(
      `${flag}: expected Unix seconds or an ISO 8601 date or time (2026-01-31, 2026-01-31T12:00Z), got "${value}"`,
      2,
    );
  return ms;
};

const groupByOf = (value: string | undefined): UsageGroupBy[] => {
  if (value === undefined) return [];
  const names = value.split(',').map((name) => name.trim());
  const known: Record<string, UsageGroupBy> = { account: 'account_id', account_id: 'account_id', model: 'model' };
  const groups = names.map((name) => {
    const group = known[name];
    if (group === undefined)
      throw new CliError(`--group-by: expected account, model or account,model, got "${value}"`, 2);
    return group;
  });
  return [...new Set(groups)];
};

const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

type Line = {
  readonly start: string;
  readonly end: string;
  readonly account: string;
  readonly model: string;
  readonly input: number;
  readonly output: number;
  readonly requests: number;
};

const linesOf = (buckets: readonly UsageBucket[]): Line[] =>
  buckets.flatMap((bucket) =>
    bucket.results.map((r) => ({
      start: iso(bucket.start_time),
      end: iso(bucket.end_time),
      account: r.account_id ?? '',
      model: r.model ?? '',
      input: r.input_tokens,
      output: r.output_tokens,
      requests: r.num_model_requests,
    })),
  );

const csvField = (value: string | number) => {
  const text = String(value);
  return /[",\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
};

const header = ['start_time', 'end_time', 'account_id', 'model', 'input_tokens', 'output_tokens', 'num_model_requests'];

const fieldsOf = (line: Line) => [
  line.start,
  line.end,
  line.account,
  line.model,
  line.input,
  line.output,
  line.requests,
];

const tableOf = (lines: readonly Line[]): string[] => {
  if (lines.length === 0) return ['no usage in that time'];
  const rows = [header, ...lines.map((line) => fieldsOf(line).map(String))];
  const widths = header.map((_, i) => Math.max(...rows.map((row) => (row[i] as string).length)));
  // Numbers right-aligned, the rest left.
  return rows.map((row) =>
    row
      .map((cell, i) => (i >= 4 ? cell.padStart(widths[i] as number) : cell.padEnd(widths[i] as number)))
      .join('  ')
      .trimEnd(),
  );
};

/** `airs usage`: tokens and completed requests per hour or day, account and model (the usage API's figures). */
export const registerUsageCommand = (program: Command, output: Output) => {
  withStoreOptions(program.command('usage'))
    .description('tokens and completed requests per hour or day, by account and model (works while the server runs)')
    .requiredOption('--since <time>', 'from (Unix seconds or ISO 8601, UTC; snapped down to its bucket)')
    .option('--until <time>', 'until, exclusive (default: now)')
    .option('--group-by <fields>', 'account, model or account,model (default: one total per bucket)')
    .option('--bucket <width>', '1h or 1d', '1d')
    .option('--account <id...>', 'only these accounts')
    .option('--model <id...>', 'only these models')
    .option('--csv', 'print CSV')
    .option('--json', 'print JSON (the usage API’s buckets)')
    .action(async (options: UsageOptions) => {
      if (options.csv === true && options.json === true) throw new CliError('--csv and --json: choose one', 2);
      const startMs = timeOf('--since', options.since);
      const endMs = options.until === undefined ? Date.now() : timeOf('--until', options.until);
      if (endMs <= startMs) throw new CliError('--until: must be after --since', 2);
      if (options.bucket !== '1h' && options.bucket !== '1d')
        throw new CliError(`--bucket: expected 1h or 1d, got "${options.bucket}"`, 2);
      const width = options.bucket;
      const groupBy = groupByOf(options.groupBy);
      const config = await configOrFail(options);
      await requireDatabase(config, output);
      const [{ openConfiguredStore }, { usagePage }, { bucketLimits }] = await Promise.all([
        import('../../storeLocation.js'),
        import('../../app/usage.js'),
        import('../../domain/usage/usagePage.js'),
      ]);
      const store = await openConfiguredStore(config);
      const buckets: UsageBucket[] = [];
      try {
        // Every page, as the API gives them (the same function), in turn.
        let fromMs: number | undefined;
        for (;;) {
          const page = await usagePage(store.reads, {
            startMs,
            endMs,
            width,
            groupBy,
            limit: bucketLimits[width].max,
            fromMs,
            accountIds: options.account,
            models: options.model,
          });
          buckets.push(...page.data);
          if (!page.has_more || page.next_page === null) break;
          const { decodeCursor } = await import('../../domain/usage/usagePage.js');
          fromMs = decodeCursor(page.next_page);
        }
      } finally {
        await store.close();
      }
      const lines = linesOf(buckets);
      if (options.csv === true) {
        output.out(header.join(','));
        for (const line of lines) output.out(fieldsOf(line).map(csvField).join(','));
      } else emit(output, options.json, { object: 'list', data: buckets }, () => tableOf(lines));
      if (options.json !== true && options.csv !== true) output.err(await dataDirNote(config));
    });
};
