import { lmdbCluster } from '../multiServer/lmdbCluster.js';
import { describeMultiServerScenarios } from '../multiServer/scenarios.js';

// Issue 21: three `airs serve` processes, started by hand on their own ports, on one LMDB data directory.
describeMultiServerScenarios(lmdbCluster);
