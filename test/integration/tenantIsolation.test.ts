import { afterAll, beforeAll, describe } from 'vitest';
import { lmdbCluster } from '../multiServer/lmdbCluster.js';
import { postgresCluster } from '../multiServer/postgresCluster.js';
import { describeTenantScenarios } from '../multiServer/tenantScenarios.js';
import { stopTestCluster, testCluster } from '../support/postgres.js';

// Issue 26: one account's flood cannot hold every worker, on one LMDB server and on two PostgreSQL nodes.
describeTenantScenarios(lmdbCluster, 1);

describe('on PostgreSQL', () => {
  beforeAll(() => testCluster().then(() => {}), 120_000);
  afterAll(() => stopTestCluster(), 60_000);
  describeTenantScenarios(postgresCluster, 2);
});
