import { afterEach, describe, expect, it } from 'vitest';
import { type FakeReplica, startFakeReplica } from '../support/fakeReplica.js';
import { fleetConfig, fleetModel, logOf, serveFleet, settleAll, statusCounts, submitAll } from '../support/fleet.js';
import { fileSandboxes, type ServerProcess } from '../support/processes.js';

/**
 * Contract 19, fallback models: `primary` runs on its own replica and names `spare` (another replica) as its
 * fallback. While none of `primary`'s upstreams is in service its requests run on `spare`; with `spillAfterSeconds`, a
 * request that waited that long for a place on `primary` runs on `spare` too. The answer's `model` is the model that
 * served it, and each replica's answer names the replica, so the two can be checked against each other.
 */

const newBox = fileSandboxes();
const replicas: FakeReplica[] = [];
const servers: ServerProcess[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop('SIGKILL');
  for (const replica of replicas.splice(0)) await replica.close();
});

const twoModels = async (primaryPlaces: number, primaryDelayMs: number, extra: Record<string, unknown>) => {
  const primary = await startFakeReplica({ name: 'primary-replica', places: primaryPlaces });
  const spare = await startFakeReplica({ name: 'spare-replica', places: 8, behaviour: { delayMs: 50 } });
  replicas.push(primary, spare);
  primary.set({ delayMs: primaryDelayMs });
  const config = fleetConfig([
    fleetModel('primary', [{ replica: primary, places: primaryPlaces }], { fallbacks: ['spare'], ...extra }),
    fleetModel('spare', [{ replica: spare, places: 8 }]),
  ]);
  return { primary, spare, config };
};

describe('fallback models (contract 19)', { timeout: 120_000 }, () => {
  it('runs a model’s requests on its fallback while its only upstream is out of service, and answers with the fallback’s name as the model', async () => {
    const { primary, spare, config } = await twoModels(4, 0, { upstreamFailures: 1 });
    // Its connections reset: a failure that is the upstream's, which takes it out of service at once.
    primary.set({ resetConnections: true });
    const { server, key, url } = await serveFleet(newBox('airs-fleet-fallback'), config);
    servers.push(server);

    const ids = await submitAll([url], key, 'primary', ['first', 'second', 'third', 'fourth', 'fifth', 'sixth'], 1);
    const settled = await settleAll(url, key, ids, 60_000);
    expect(statusCounts(settled), logOf(server)).toEqual({ completed: 6 });
    for (const one of settled) {
      expect(one.model).toBe('spare');
      expect(one.response).toMatch(/^spare-replica says: /);
    }
    expect(spare.stats().answered).toBe(6);
    expect(primary.stats().answered).toBe(0);
  });

  it('spills a request that waited spillAfterSeconds for a place on its model to the fallback, while the rest run where they were sent', async () => {
    // One place, four seconds a call: eight requests would take 32 s there; after 1 s of waiting they spill.
    const { primary, spare, config } = await twoModels(1, 4_000, { spillAfterSeconds: 1 });
    const { server, key, url } = await serveFleet(newBox('airs-fleet-spill'), config);
    servers.push(server);

    const started = Date.now();
    const ids = await submitAll(
      [url],
      key,
      'primary',
      Array.from({ length: 8 }, (_, i) => `spill ${i}`),
      8,
    );
    const settled = await settleAll(url, key, ids, 60_000);
    expect(statusCounts(settled), logOf(server)).toEqual({ completed: 8 });
    expect(Date.now() - started).toBeLessThan(20_000);
    // The answer's model and the replica that wrote it agree, request by request.
    for (const one of settled)
      expect(
        one.response?.startsWith(one.model === 'spare' ? 'spare-replica says' : 'primary-replica says'),
        JSON.stringify(one),
      ).toBe(true);
    const bySpare = settled.filter((one) => one.model === 'spare').length;
    expect(bySpare).toBeGreaterThanOrEqual(5);
    expect(settled.length - bySpare).toBeGreaterThanOrEqual(1);
    expect(primary.maxInFlight()).toBe(1);
    expect(spare.stats().answered).toBe(bySpare);
  });
});
