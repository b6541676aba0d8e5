import { testCluster } from '../support/postgres.js';
import { runCli, type Sandbox, type ServerProcess, sandbox, startServer } from '../support/processes.js';
import type { Cluster, ClusterTarget } from './clusterTarget.js';

/** Starts `count` nodes on a new database (as `postgresCluster.start`), and says which (for tests that read it). */
export const startPostgresNodes = async (
  config: Record<string, unknown>,
  count: number,
): Promise<Cluster & { readonly databaseUrl: string }> => {
  const postgres = await testCluster();
  const url = await postgres.createDatabase();
  const plain: Sandbox = sandbox('airs-multi-pg');
  const box: Sandbox = { ...plain, env: (extra) => plain.env({ ...extra, AIRS_DATABASE_URL: url }) };
  box.writeConfig(config);
  const servers: ServerProcess[] = [];
  const dispose = async () => {
    await Promise.all(servers.map((server) => server.stop('SIGKILL')));
    box.remove();
    await postgres.dropDatabase(url);
  };
  try {
    // The first makes the schema alone; the others find it (they would also wait on the migrations' lock).
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
  return {
    servers,
    cli: (args) => runCli(box, args, { timeoutMs: 30_000 }),
    dispose,
    databaseUrl: url,
  };
};

/**
 * The PostgreSQL cluster: servers started by hand (`airs serve`, each on its own free port of 127.0.0.1) as nodes of
 * one new database of the tests' throwaway PostgreSQL (AIRS_DATABASE_URL), and the CLI on that database. Nothing of
 * the store is on the nodes' disk.
 */
export const postgresCluster: ClusterTarget = {
  name: 'PostgreSQL: one database',
  start: startPostgresNodes,
};
