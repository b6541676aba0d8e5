import { afterAll, beforeAll } from 'vitest';
import { postgresCluster } from '../multiServer/postgresCluster.js';
import { describeMultiServerScenarios } from '../multiServer/scenarios.js';
import { stopTestCluster, testCluster } from '../support/postgres.js';

// Issue 22: the multi-server suite of issue 21, unchanged, with three `airs serve` nodes on one PostgreSQL database.
beforeAll(() => testCluster().then(() => {}), 120_000);
afterAll(() => stopTestCluster(), 60_000);

describeMultiServerScenarios(postgresCluster);
