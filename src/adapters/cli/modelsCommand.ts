import type { Command } from 'commander';
import { configOrFail, requireDatabase, type StoreOptions, withStoreOptions } from './context.js';
import { CliError, emit, type Output } from './output.js';

type CheckOptions = { readonly config?: string; readonly json?: boolean };

/**
 * `airs models check`: asks each `openai` model's upstream for its models (`GET {baseUrl}/models`, with its key, at most
 * 5 s), as `airs serve` does at start, and prints one line per model: `ok`, or the problem and what to look at.
 * Exit 1 when any upstream has a problem, so that a deployment script can stop on it.
 */
const check = async (options: CheckOptions, output: Output) => {
  const config = await configOrFail({ config: options.config });
  const [{ checkModels }, { causeOf }] = await Promise.all([
    import('../models/upstreamCheck.js'),
    import('../../app/upstreamProblems.js'),
  ]);
  const checks = new Map((await checkModels(config.models)).map((found) => [found.model, found]));
  const rows = config.models.map((model) => {
    const found = checks.get(model.id);
    if (found === undefined) return { model: model.id, provider: model.provider, state: 'built in' as const };
    if (found.problem === undefined)
      return { model: model.id, provider: model.provider, upstream: found.url, state: 'ok' as const };
    return {
      model: model.id,
      provider: model.provider,
      upstream: found.url,
      state: 'problem' as const,
      cause: causeOf(found.problem),
    };
  });
  emit(output, options.json, { models: rows }, () =>
    rows.map((row) =>
      row.state === 'built in'
        ? `${row.model}: ok (${row.provider}, built in: no upstream to check)`
        : row.state === 'ok'
          ? `${row.model}: ok (its upstream ${row.upstream} answers)`
          : `${row.model}: problem: its upstream ${row.upstream} ${row.cause}`,
    ),
  );
  const problems = rows.filter((row) => row.state === 'problem').length;
  if (problems > 0)
    throw new CliError(`${problems} of ${checks.size} upstreams ${problems === 1 ? 'has' : 'have'} a problem`, 1);
};

type ListOptions = StoreOptions & { readonly json?: boolean };

/**
 * `airs models list`: each configured model's upstreams, one line each: its name and base URL (no user, password or
 * query: never a key), places, calls in flight in all processes and nodes (the store's counters), and state. Reads
 * the store as `replay` does, while servers run.
 */
const list = async (options: ListOptions, output: Output) => {
  const config = await configOrFail(options);
  // Reading never creates: a data directory without a database is a mistyped setting.
  await requireDatabase(config, output);
  const [{ openConfiguredStore }, { upstreamRows }, { upstreamName }] = await Promise.all([
    import('../../storeLocation.js'),
    import('../../app/upstreamList.js'),
    import('../models/upstreamName.js'),
  ]);
  const store = await openConfiguredStore(config);
  let rows: Awaited<ReturnType<typeof upstreamRows>>;
  try {
    rows = await upstreamRows(config.models, store.reads, Date.now());
  } finally {
    await store.close();
  }
  const shown = rows.map((row) => ({
    ...row,
    baseUrl: upstreamName(row.baseUrl),
    ...(row.until === undefined ? {} : { until: new Date(row.until).toISOString() }),
  }));
  const models = config.models.map((model) => ({
    id: model.id,
    provider: model.provider,
    upstreams: shown.filter((row) => row.model === model.id).map(({ model: _model, ...upstream }) => upstream),
  }));
  emit(output, options.json, { models }, () =>
    models.flatMap((model) =>
      model.upstreams.length === 0
        ? [`${model.id}: ${model.provider}, built in: no upstream`]
        : model.upstreams.map(
            (up) =>
              `${model.id} ${up.name} ${up.baseUrl} in_flight=${up.inFlight}/${up.maxConcurrency ?? 'unbounded'} ${up.state}` +
              `${up.until === undefined ? '' : ` until=${up.until}`}${up.lastError === undefined ? '' : ` last_error=${JSON.stringify(up.lastError)}`}`,
          ),
    ),
  );
};

export const registerModelsCommand = (program: Command, output: Output) => {
  const models = program.command('models').description('the configured models');
  models
    .command('check')
    .description(
      "check each openai model's upstream (GET {baseUrl}/models with its key, at most 5 s); exit 1 on a problem",
    )
    .option('--config <file>', 'the config file (default: $AIRS_CONFIG, else ./airs.config.json if present)')
    .option('--json', 'print the result as one JSON document')
    .action((options: CheckOptions) => check(options, output));
  withStoreOptions(models.command('list'))
    .description(
      "each model's upstreams: base URL, places, calls in flight in all processes and nodes, state (works while servers run)",
    )
    .option('--json', 'print the result as one JSON document')
    .action((options: ListOptions) => list(options, output));
};
