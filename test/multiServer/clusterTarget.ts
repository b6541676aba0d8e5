import { type CliResult, runCli, type Sandbox, type ServerProcess, startServer } from '../support/processes.js';

/**
 * Several `airs serve` processes on one store, each its own process with its own URL, so that a call can be sent to
 * each of them; and the CLI on that store, as an operator runs it while they serve.
 */
export type Cluster = {
  /** The servers, in the order they were started. */
  readonly servers: readonly ServerProcess[];
  /** Runs one `airs` command (`accounts create …`, `replay --json`) against the cluster's store, to its end. */
  cli(args: readonly string[]): Promise<CliResult>;
  /** Stops the servers still running (SIGKILL) and removes the store. */
  dispose(): Promise<void>;
};

/**
 * Where a cluster's store lives and how servers and the CLI are pointed at it: today an LMDB data directory
 * (`lmdbCluster.ts`), for PostgreSQL a database URL. The scenarios (`scenarios.ts`) know nothing else of the store.
 */
export type ClusterTarget = {
  readonly name: string;
  /**
   * Starts `servers` server processes on one new, empty store, with `config`: a config file's contents, everything
   * but where the store is (the target adds that). Resolves once every server listens.
   */
  start(config: Record<string, unknown>, servers: number): Promise<Cluster>;
};

/**
 * Starts `count` servers in `box` (whose environment points them at the store) with `config` as their config file:
 * the first alone (it makes the store: a data directory and its database, or a database's schema), the others
 * together (they find it). `removeStore` runs after the servers are killed and the box removed.
 */
export const startNodes = async (
  box: Sandbox,
  config: Record<string, unknown>,
  count: number,
  removeStore: () => Promise<void> = async () => {},
): Promise<Cluster> => {
  box.writeConfig(config);
  const servers: ServerProcess[] = [];
  const dispose = async () => {
    await Promise.all(servers.map((server) => server.stop('SIGKILL')));
    box.remove();
    await removeStore();
  };
  try {
    servers.push(await startServer(box));
    await Promise.all(
      Array.from({ length: count - 1 }, async () => {
        servers.push(await startServer(box));
      }),
    );
  } catch (error) {
    await dispose();
    throw error;
  }
  return { servers, cli: (args) => runCli(box, args, { timeoutMs: 30_000 }), dispose };
};

/** Runs a CLI command that must succeed and print one JSON document (`--json` is added); returns the document. */
export const clusterJson = async <T = unknown>(cluster: Cluster, args: readonly string[]): Promise<T> => {
  const result = await cluster.cli([...args, '--json']);
  if (result.code !== 0) throw new Error(`airs ${args.join(' ')} exited ${result.code}: ${result.stderr.trim()}`);
  return JSON.parse(result.stdout) as T;
};

/** Creates an account on `plan` and one key for it through the CLI, as an operator does. */
export const accountWithKey = async (cluster: Cluster, email: string, plan: string) => {
  const account = await clusterJson<{ id: string }>(cluster, ['accounts', 'create', '--email', email, '--plan', plan]);
  const key = await clusterJson<{ id: string; key: string }>(cluster, ['keys', 'create', '--account', account.id]);
  return { accountId: account.id, key: key.key, keyId: key.id };
};
