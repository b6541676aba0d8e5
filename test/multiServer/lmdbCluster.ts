import { runCli, type Sandbox, type ServerProcess, sandbox, startServer } from '../support/processes.js';
import type { Cluster, ClusterTarget } from './clusterTarget.js';

/**
 * The LMDB cluster: servers started by hand (`airs serve`, each on its own free port of 127.0.0.1) on one data
 * directory, and the CLI on that directory.
 */
export const lmdbCluster: ClusterTarget = {
  name: 'LMDB: one data directory',
  start: async (config, count) => {
    const box: Sandbox = sandbox('airs-multi');
    box.writeConfig(config);
    const servers: ServerProcess[] = [];
    const dispose = async () => {
      await Promise.all(servers.map((server) => server.stop('SIGKILL')));
      box.remove();
    };
    try {
      // The first creates the data directory and its database alone; the others open it (as serveMany does).
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
    } satisfies Cluster;
  },
};
