/**
 * The bench's PostgreSQL: a throwaway cluster of the system's binaries, started as the tests start theirs
 * (test/support/postgres.ts), pinned with the systems under test, and with every commit durable by default
 * (`synchronous_commit = on`, `fsync = on`): airs sets `synchronous_commit = on` on its own connections whatever the
 * default, and the baselines' connections get the same from the server's default.
 */
import pg from 'pg';
import { type Cluster, childrenOf, startCluster } from '../support/postgres.js';
import { pinned } from './cpus.js';
import { cpuTicksOf } from './procfs.js';

/** The bench cluster's settings (PostgreSQL's defaults otherwise; `shared_buffers` a little above the tests'). */
export const benchSettings = {
  synchronous_commit: 'on',
  fsync: 'on',
  full_page_writes: 'on',
  max_connections: '300',
  shared_buffers: '256MB',
} as const;

export type BenchCluster = Cluster & {
  /** The server's version (`SHOW server_version`). */
  readonly version: string;
  /** The cluster's processes now: the postmaster and its children (backends, WAL writer, checkpointer...). */
  pids(): number[];
};

/** The cluster, its postmaster and every process it forks on `cpus` (taskset; not pinned without it). */
export const startBenchCluster = async (cpus: string | undefined): Promise<BenchCluster> => {
  const cluster = await startCluster({
    settings: benchSettings,
    wrap: (command, args) => pinned(command, args, cpus),
  });
  const client = new pg.Client({ connectionString: cluster.url() });
  let version = 'unknown';
  try {
    await client.connect();
    const { rows } = await client.query<{ server_version: string }>('SHOW server_version');
    version = rows[0]?.server_version ?? version;
  } catch (error) {
    await cluster.stop();
    throw error;
  } finally {
    await client.end().catch(() => {});
  }
  const pids = () => {
    const postmaster = cluster.postmaster();
    return [postmaster, ...childrenOf(postmaster)];
  };
  return { ...cluster, version, pids };
};

/** CPU ticks used so far by all the given processes (those gone count as nothing). */
export const ticksOf = (pids: readonly number[]): number => pids.reduce((sum, pid) => sum + (cpuTicksOf(pid) ?? 0), 0);
