import type { Effect } from 'effect';
import type { AccountsShape } from '../../app/Accounts.js';
import { type Config, ConfigError, loadConfig } from '../../config.js';
import type { Refused } from '../../domain/errors.js';
import { CliError } from './output.js';

export const configOrFail = (): Config => {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) throw new CliError(`bad configuration: ${error.message}`, 2);
    throw error;
  }
};

/** Runs one management command against the data directory, with the store open only for its duration. */
export const withAccounts = async <A>(use: (accounts: AccountsShape, config: Config) => Effect.Effect<A, Refused>) => {
  const config = configOrFail();
  // Loaded on use: commands that do not touch the store start without these modules.
  const [{ Effect, ManagedRuntime, Result }, { Accounts }, { silentLogger }, { managementLayer }] = await Promise.all([
    import('effect'),
    import('../../app/Accounts.js'),
    import('../../ports/Logger.js'),
    import('../../server.js'),
  ]);
  const runtime = ManagedRuntime.make(managementLayer({ config, logger: silentLogger() }));
  try {
    const result = await runtime.runPromise(
      Effect.result(Effect.flatMap(Accounts, (accounts) => use(accounts, config))),
    );
    if (Result.isFailure(result)) throw new CliError(result.failure.message);
    return result.success;
  } finally {
    await runtime.dispose();
  }
};
