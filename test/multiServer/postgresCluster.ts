import { testCluster } from '../support/postgres.js';
import { type Sandbox, sandbox } from '../support/processes.js';
import { type Cluster, type ClusterTarget, startNodes } from './clusterTarget.js';

/** Starts `count` nodes on a new database (as `postgresCluster.start`), and says which (for tests that read it). */
export const startPostgresNodes = async (
  config: Record<string, unknown>,
  count: number,
): Promise<Cluster & { readonly databaseUrl: string }> => {
  const postgres = await testCluster();
  const url = await postgres.createDatabase();
  const plain: Sandbox = sandbox('airs-multi-pg');
  const box: Sandbox = { ...plain, env: (extra) => plain.env({ ...extra, AIRS_DATABASE_URL: url }) };
  const cluster = await startNodes(box, config, count, () => postgres.dropDatabase(url));
  return { ...cluster, databaseUrl: url };
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
