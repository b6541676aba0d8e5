import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { clusterJson } from '../multiServer/clusterTarget.js';
import { startPostgresNodes } from '../multiServer/postgresCluster.js';
import { type FakeReplica, startFleet } from '../support/fakeReplica.js';
import {
  type FleetMember,
  fleetConfig,
  fleetModel,
  peaks,
  serveFleet,
  settleAll,
  statusCounts,
  submitAll,
} from '../support/fleet.js';
import { stopTestCluster, testCluster } from '../support/postgres.js';
import { fileSandboxes, type ServerProcess } from '../support/processes.js';

/**
 * Contract 19, places are exact: three replicas of unequal places (2, 3, 5) behind one model, flooded through
 * `airs serve` with more workers than the replicas have places; each replica counts its own calls in flight, and none
 * is ever above its places: with one process, with `--processes 2`, and with two nodes on one PostgreSQL database.
 */

const newBox = fileSandboxes();
const replicas: FakeReplica[] = [];
const servers: ServerProcess[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop('SIGKILL');
  for (const replica of replicas.splice(0)) await replica.close();
});
beforeAll(() => testCluster().then(() => {}), 120_000);
afterAll(() => stopTestCluster(), 60_000);

const flood = 150;
const prompts = Array.from({ length: flood }, (_, i) => `flood request ${i}`);

/** Three replicas of 2, 3 and 5 places, each answering after 100 ms. */
const threeReplicas = async (): Promise<FleetMember[]> => {
  const started = await startFleet(
    ['r2', 'r3', 'r5'].map((name) => ({ name, places: Number(name.slice(1)), behaviour: { delayMs: 100 } })),
  );
  replicas.push(...started);
  return started.map((replica) => ({ replica, places: replica.stats().places ?? 0 }));
};

/** The flood completed, and no replica saw more calls at once than its places; the largest one was filled. */
const expectPlacesKept = (members: readonly FleetMember[], settled: Awaited<ReturnType<typeof settleAll>>) => {
  expect(statusCounts(settled)).toEqual({ completed: flood });
  const seen = peaks(members);
  for (const member of members) {
    expect(member.replica.maxInFlight(), JSON.stringify(seen)).toBeLessThanOrEqual(member.places);
    expect(member.replica.stats().overPlaces).toBe(0);
    // Every replica took part: the flood was spread, not run on one.
    expect(member.replica.calls().length, JSON.stringify(seen)).toBeGreaterThan(0);
  }
  // A flood that never filled a replica would show nothing about its places.
  expect(
    members.some((member) => member.replica.maxInFlight() === member.places),
    JSON.stringify(seen),
  ).toBe(true);
  expect(members.reduce((sum, member) => sum + member.replica.calls().length, 0)).toBe(flood);
};

describe('one model over three replicas of unequal places (contract 19)', { timeout: 120_000 }, () => {
  it.each([
    ['one process', []],
    ['--processes 2', ['--processes', '2']],
  ])('never puts more calls on a replica than its places under a flood, with %s', async (_label, args) => {
    const members = await threeReplicas();
    const { server, key, url } = await serveFleet(
      newBox('airs-fleet-places'),
      fleetConfig([fleetModel('fleet', members)]),
      args,
    );
    servers.push(server);
    const ids = await submitAll([url], key, 'fleet', prompts, 32);
    expectPlacesKept(members, await settleAll(url, key, ids, 90_000));
  });

  it('never puts more calls on a replica than its places under a flood sent to two nodes on one PostgreSQL database', async () => {
    const members = await threeReplicas();
    const cluster = await startPostgresNodes(fleetConfig([fleetModel('fleet', members)]), 2);
    try {
      const account = await clusterJson<{ id: string }>(cluster, [
        'accounts',
        'create',
        '--email',
        'fleet@example.com',
        '--plan',
        'scale',
      ]);
      const { key } = await clusterJson<{ key: string }>(cluster, ['keys', 'create', '--account', account.id]);
      const urls = cluster.servers.map((server) => server.url);
      const ids = await submitAll(urls, key, 'fleet', prompts, 32);
      expectPlacesKept(members, await settleAll(urls[0] as string, key, ids, 90_000));
    } finally {
      await cluster.dispose();
    }
  });
});
