import { afterEach, describe, expect, it } from 'vitest';
import { type FakeReplica, startFakeReplica } from '../support/fakeReplica.js';
import { fleetConfig, logOf, serveFleet, settleAll, statusCounts, submitAll } from '../support/fleet.js';
import { fileSandboxes, type ServerProcess, sleep } from '../support/processes.js';

/**
 * Issue 41, work held, not burnt: a model of one upstream (the one-`baseUrl` form) that goes out of service at its
 * first failure, with one attempt per request. Requests sent while it is down fail nothing: the attempt whose call
 * failed is given back unspent, the others wait, and once the upstream is back on its port the quiet server starts
 * them by itself when the cool-down ends (nothing polls it into looking: `GET /v1/ai` does not wake the pool).
 */

const newBox = fileSandboxes();
const replicas: FakeReplica[] = [];
const servers: ServerProcess[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop('SIGKILL');
  for (const replica of replicas.splice(0)) await replica.close();
});

describe('requests while the only upstream of their model is down (issue 41)', { timeout: 90_000 }, () => {
  it('keeps their one attempt while the upstream is out of service and completes them all once it is back, started by the cool-down’s end', async () => {
    const replica = await startFakeReplica({ name: 'only', places: 4 });
    replicas.push(replica);
    const model = {
      id: 'solo',
      provider: 'openai',
      baseUrl: replica.baseUrl,
      upstreamModel: 'fleet-model',
      timeoutMs: 10_000,
      maxRetries: 0,
      upstreamFailures: 1,
    };
    const { server, key, url } = await serveFleet(newBox('airs-fleet-held'), fleetConfig([model], 1));
    servers.push(server);
    await replica.kill();

    const ids = await submitAll([url], key, 'solo', ['held 0', 'held 1', 'held 2', 'held 3', 'held 4'], 5);
    // Every one was tried or waits: none failed, though each has a single attempt.
    const early = await settleAll(url, key, ids, 3_000, 5);
    expect(statusCounts(early), logOf(server)).toEqual({ queued: 5 });
    expect(server.stderr()).toContain('upstream out of service');
    expect(server.stderr()).toContain('attempt held');

    await replica.restart();
    const settled = await settleAll(url, key, ids, 40_000, 5);
    expect(statusCounts(settled), logOf(server)).toEqual({ completed: 5 });
    expect(replica.stats().answered).toBe(5);
    // Back once, logged once.
    await sleep(100);
    expect(server.stderr().split('upstream back in service').length - 1).toBe(1);
  });
});
