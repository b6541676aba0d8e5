import { sandbox } from '../support/processes.js';
import { type ClusterTarget, startNodes } from './clusterTarget.js';

/**
 * The LMDB cluster: servers started by hand (`airs serve`, each on its own free port of 127.0.0.1) on one data
 * directory, and the CLI on that directory.
 */
export const lmdbCluster: ClusterTarget = {
  name: 'LMDB: one data directory',
  start: (config, count) => startNodes(sandbox('airs-multi'), config, count),
};
