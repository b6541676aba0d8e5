import { statSync } from 'node:fs';
import type { Command } from 'commander';
import type * as Effect from 'effect/Effect';
import type { AccountsShape } from '../../app/Accounts.js';
import type { CommitterShape } from '../../app/Committer.js';
import type { Config, ConfigOverrides } from '../../config.js';
import type { Refused } from '../../domain/errors.js';
import type { ClockShape } from '../../ports/Clock.js';
import type { StoreShape } from '../../ports/Store.js';
import { CliError, type Output } from './output.js';

// Every module here that is not a type is loaded on use, not at start: `--help`, `--version` and `ask` start without
// zod, effect or lmdb, and a management command without the server's modules (see docs/decisions.md). Effect's
// modules are imported one by one: its index loads all 247 of them (issue 31).

/** The options of every command that uses the data directory and the config file. */
export type StoreOptions = { readonly dataDir?: string; readonly databaseUrl?: string; readonly config?: string };

/** `serve`'s options beside those: they win over the environment and the config file. */
export type ServeOptions = StoreOptions & {
  readonly port?: string;
  readonly host?: string;
  readonly processes?: string;
};

/** Adds `--data-dir`, `--database-url` and `--config` to a command that uses the store (they win over the
 * environment). */
export const withStoreOptions = (command: Command): Command =>
  command
    .option('--data-dir <dir>', 'the data directory (default: $AIRS_DATA_DIR, else dataDir of the config, else ./data)')
    .option(
      '--database-url <url>',
      'a PostgreSQL database as the store instead of the data directory (default: $AIRS_DATABASE_URL, else store.url of the config)',
    )
    .option('--config <file>', 'the config file (default: $AIRS_CONFIG, else ./airs.config.json if present)');

const given = (flag: string, value: string | undefined, what: string): string | undefined => {
  if (value !== undefined && value.trim() === '') throw new CliError(`${flag}: expected ${what}, got ""`, 2);
  return value;
};

const processesOf = (value: string | undefined): number | undefined => {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 256)
    throw new CliError(`--processes: expected an integer from 1 to 256, got "${value}"`, 2);
  return Number(value);
};

const portOf = (value: string | undefined): number | undefined => {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) > 65_535)
    throw new CliError(`--port: expected an integer from 0 to 65535, got "${value}"`, 2);
  return Number(value);
};

/** Where each data directory this command was configured with came from (config.ts `dataDirFrom`), for messages
 * about it that are made far from the config (the store's). */
const dataDirSettings = new Map<string, string>();

/**
 * What the CLI says of a data directory the store cannot use (lmdb/dataDir.ts `DataDirUnusable`): the store's
 * message, where the setting came from, and for a file, which setting to change (the one that was used).
 */
export const dataDirUnusableMessage = (error: Error & { dataDir?: unknown; isFile?: unknown }): string => {
  const from = typeof error.dataDir === 'string' ? dataDirSettings.get(error.dataDir) : undefined;
  if (from === undefined) return error.message;
  const setting = from.startsWith('the default') ? '--data-dir, AIRS_DATA_DIR or dataDir' : from;
  return `${error.message} (data directory from ${from})${error.isFile === true ? `; set ${setting} to a directory` : ''}`;
};

/**
 * The configuration in force for this command: its flags, then the environment, then the config file, then the
 * defaults. A bad flag or a bad config is one line and exit 2.
 */
export const configOrFail = async (options: ServeOptions = {}): Promise<Config> => {
  const overrides: ConfigOverrides = {
    configFile: given('--config', options.config, 'a file'),
    dataDir: given('--data-dir', options.dataDir, 'a directory'),
    databaseUrl: given('--database-url', options.databaseUrl, 'a postgres:// URL'),
    port: portOf(options.port),
    host: given('--host', options.host, 'a host name or address'),
    processes: processesOf(options.processes),
  };
  const { ConfigError, loadConfig } = await import('../../config.js');
  try {
    const config = loadConfig(process.env, process.cwd(), overrides);
    dataDirSettings.set(config.dataDir, config.dataDirFrom);
    return config;
  } catch (error) {
    if (error instanceof ConfigError) throw new CliError(`bad configuration: ${error.message}`, 2);
    throw error;
  }
};

/** `serve`'s configuration: as every command's, and the upstream keys its models name must be set. */
export const serveConfigOrFail = async (options: ServeOptions): Promise<Config> => {
  const config = await configOrFail(options);
  const { checkModelSecrets } = await import('../../config.js');
  try {
    checkModelSecrets(config);
  } catch (error) {
    throw new CliError(`bad configuration: ${(error as Error).message}`, 2);
  }
  return config;
};

/**
 * Commands that do not create an account never create a data directory or a database either: a data directory
 * without one is most likely a mistyped setting, and an empty database made there would answer "no accounts".
 * A directory that is a file, or whose file is damaged, is left to the store, whose messages say so. One that others
 * may read is used, with a warning line.
 */
export const requireDatabase = async (config: Config, output: Output): Promise<void> => {
  if (config.store.url !== undefined) return requirePostgresDatabase(config, config.store.url);
  try {
    if (!statSync(config.dataDir).isDirectory()) return;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return;
    throw noDatabase(config);
  }
  const [{ environmentFile }, { checkDataFile }] = await Promise.all([
    import('../lmdb/databases.js'),
    import('../lmdb/dataFile.js'),
  ]);
  // A data file that is missing where the directory held one is damage, and checkDataFile says so.
  checkDataFile(config.dataDir, environmentFile(config.dataDir));
  if (!fileExists(environmentFile(config.dataDir))) throw noDatabase(config);
  await warnIfOpenToOthers(config, output);
};

/** One warning line on stderr if the data directory or a file in it is open to other users (fileModes.ts). */
export const warnIfOpenToOthers = async (config: Config, output: Output): Promise<void> => {
  if (config.store.url !== undefined) return;
  const { openToOthers } = await import('../lmdb/fileModes.js');
  const warning = openToOthers(config.dataDir);
  if (warning !== undefined) output.err(`airs: ${warning}`);
};

const fileExists = (path: string) => statSync(path, { throwIfNoEntry: false }) !== undefined;

const noDatabase = (config: Config) =>
  new CliError(
    `no airs database in ${config.dataDir} (data directory from ${config.dataDirFrom}); nothing was created: check the setting, or create the first account with "airs accounts create"`,
    2,
  );

/** A database URL names a database that holds airs's tables: a command that only reads or changes never makes
 * them (an empty database is most likely a mistyped URL); one that cannot be reached is one line. */
const requirePostgresDatabase = async (config: Config, url: string): Promise<void> => {
  const [{ airsSchemaIn }, { storeName }, { withoutSecrets }] = await Promise.all([
    import('../postgres/presence.js'),
    import('../../storeLocation.js'),
    import('../postgres/redactedUrl.js'),
  ]);
  const found = await airsSchemaIn(url);
  if (typeof found === 'object')
    throw new CliError(`cannot reach the ${storeName(config)}: ${withoutSecrets(found.reason, url)}`, 2);
  if (!found)
    throw new CliError(
      `no airs database in the ${storeName(config)}; nothing was created: check the URL, or create the first account with "airs accounts create"`,
      2,
    );
};

/** The line that tells a person (not a script: never with --json) which store a command used. */
export const dataDirNote = async (config: Config) =>
  `airs: ${(await import('../../storeLocation.js')).storeName(config)}`;

export type AccountsCommand = {
  readonly options: StoreOptions & { readonly json?: boolean };
  readonly output: Output;
  /** Only `accounts create` may create the data directory and its database; every other command needs them. */
  readonly creates?: boolean;
};

/**
 * Runs one management command against the data directory, with the store open only for its duration; gives its
 * result and the configuration it ran with. Without --json, a success also says on stderr which data directory it
 * used (stdout stays what scripts read).
 */
export const runAccounts = async <A>(
  command: AccountsCommand,
  use: (accounts: AccountsShape) => Effect.Effect<A, Refused>,
): Promise<{ readonly result: A; readonly config: Config }> => {
  const config = await configOrFail(command.options);
  if (command.creates !== true) await requireDatabase(config, command.output);
  else await warnIfOpenToOthers(config, command.output);
  const [Effect, ManagedRuntime, Result, { Accounts }, { managementLayer }, { silentLogger }] = await Promise.all([
    import('effect/Effect'),
    import('effect/ManagedRuntime'),
    import('effect/Result'),
    import('../../app/Accounts.js'),
    import('../../baseLayer.js'),
    import('../../ports/Logger.js'),
  ]);
  const runtime = ManagedRuntime.make(managementLayer({ config, logger: silentLogger() }));
  try {
    const result = await runtime.runPromise(Effect.result(Effect.flatMap(Accounts, use)));
    if (Result.isFailure(result)) throw new CliError(result.failure.message);
    if (command.options.json !== true) command.output.err(await dataDirNote(config));
    return { result: result.success, config };
  } finally {
    await runtime.dispose();
  }
};

/**
 * Runs `use` with the store, its committer and the clock of the management layer (no workers), disposed after it:
 * for a command that changes something through the machines, as the API does (a cancel).
 */
export const withCommitter = async <A>(
  config: Config,
  use: (services: {
    readonly store: StoreShape;
    readonly committer: CommitterShape;
    readonly clock: ClockShape;
  }) => Promise<A>,
): Promise<A> => {
  const [Effect, ManagedRuntime, { managementLayer }, { silentLogger }, { Committer }, { Store }, { AppClock }] =
    await Promise.all([
      import('effect/Effect'),
      import('effect/ManagedRuntime'),
      import('../../baseLayer.js'),
      import('../../ports/Logger.js'),
      import('../../app/Committer.js'),
      import('../../ports/Store.js'),
      import('../../ports/Clock.js'),
    ]);
  const runtime = ManagedRuntime.make(managementLayer({ config, logger: silentLogger() }));
  try {
    const services = await runtime.runPromise(
      Effect.gen(function* () {
        return { store: yield* Store, committer: yield* Committer, clock: yield* AppClock };
      }),
    );
    return await use(services);
  } finally {
    await runtime.dispose();
  }
};

/** `runAccounts` for a command that needs only the result. */
export const withAccounts = async <A>(
  command: AccountsCommand,
  use: (accounts: AccountsShape) => Effect.Effect<A, Refused>,
): Promise<A> => (await runAccounts(command, use)).result;
