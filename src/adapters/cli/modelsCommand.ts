import type { Command } from 'commander';
import {
  configOrFail,
  requireDatabase,
  type StoreOptions,
  serveConfigOrFail,
  withCommitter,
  withStoreOptions,
} from './context.js';
import { CliError, emit, type Output } from './output.js';

type CheckOptions = { readonly config?: string; readonly json?: boolean };

/**
 * `airs models check`: asks each `openai` model's upstream for its models (`GET {baseUrl}/models`, with its key, at most
 * 5 s), as `airs serve` does at start, and prints one line per model: `ok` when the upstream lists the model's
 * `upstreamModel`, else the problem and what to look at, or `unconfirmed` when its answer cannot tell (no list). Its
 * configuration is read as `serve` reads it: an `apiKeyEnv` whose variable is unset is named, as `serve` names it.
 * Exit 1 when any upstream has a problem, so that a deployment script can stop on it (not when one is unconfirmed:
 * the upstream answers, and a server without a model list may serve the model all the same).
 */
const check = async (options: CheckOptions, output: Output) => {
  const config = await serveConfigOrFail({ config: options.config });
  const [{ checkModels }, { causeOf }] = await Promise.all([
    import('../models/upstreamCheck.js'),
    import('../../app/upstreamProblems.js'),
  ]);
  const checks = new Map((await checkModels(config.models)).map((found) => [found.model, found]));
  const rows = config.models.map((model) => {
    const found = checks.get(model.id);
    if (found === undefined) return { model: model.id, provider: model.provider, state: 'built in' as const };
    const at = { model: model.id, provider: model.provider, upstream: found.url };
    if (found.problem !== undefined) return { ...at, state: 'problem' as const, cause: causeOf(found.problem) };
    if (found.unconfirmed !== undefined) return { ...at, state: 'unconfirmed' as const, cause: found.unconfirmed };
    return { ...at, state: 'ok' as const };
  });
  emit(output, options.json, { models: rows }, () =>
    rows.map((row) => {
      if (row.state === 'built in') return `${row.model}: ok (${row.provider}, built in: no upstream to check)`;
      if (row.state === 'ok') return `${row.model}: ok (its upstream ${row.upstream} answers and serves it)`;
      if (row.state === 'unconfirmed')
        return `${row.model}: unconfirmed: its upstream ${row.upstream} answers, but the check could not confirm that it serves the model (${row.cause})`;
      return `${row.model}: problem: its upstream ${row.upstream} ${row.cause}`;
    }),
  );
  const problems = rows.filter((row) => row.state === 'problem').length;
  if (problems > 0)
    throw new CliError(`${problems} of ${checks.size} upstreams ${problems === 1 ? 'has' : 'have'} a problem`, 1);
};

/**
 * `airs models reload`: asks every server of this data directory or database (each process of `--processes N`, each
 * PostgreSQL node) to read its config file again and apply its `models` and `plans`, as SIGHUP does to one server,
 * through the store's notices (ports/Store.ts `StoreNotices`). Each server logs what it applied. This command's own
 * config must load first: a file that does not validate here is refused before anything is asked.
 */
const reload = async (options: StoreOptions, output: Output) => {
  const config = await configOrFail(options);
  await requireDatabase(config, output);
  const { storeName } = await import('../../storeLocation.js');
  const asked = await withCommitter(config, async ({ store }) => {
    if (store.notices === undefined) return false;
    await store.notices.askReload();
    return true;
  });
  if (!asked) throw new CliError(`the store of ${storeName(config)} cannot tell its servers to reload`, 1);
  output.out(
    `asked every server of the ${storeName(config)} to reload its config; each logs what it applied ("config reloaded")`,
  );
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
      "check that each openai model's upstream serves its upstreamModel (GET {baseUrl}/models with its key, at most 5 s); exit 1 on a problem",
    )
    .option('--config <file>', 'the config file (default: $AIRS_CONFIG, else ./airs.config.json if present)')
    .option('--json', 'print the result as one JSON document')
    .action((options: CheckOptions) => check(options, output));
  withStoreOptions(models.command('reload'))
    .description(
      'ask every server of this data directory or database (every process, every node) to read its config file again and apply its models and plans without a restart, as SIGHUP does to one; each server logs what it applied, or why it changed nothing',
    )
    .action((options: StoreOptions) => reload(options, output));
  withStoreOptions(models.command('list'))
    .description(
      "each model's upstreams: base URL, places, calls in flight in all processes and nodes, state (works while servers run)",
    )
    .option('--json', 'print the result as one JSON document')
    .action((options: ListOptions) => list(options, output));
};
