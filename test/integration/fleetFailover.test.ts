import { afterEach, describe, expect, it } from 'vitest';
import { type FakeReplica, startFleet } from '../support/fakeReplica.js';
import { fleetConfig, fleetModel, logOf, serveFleet, settleAll, statusCounts, submitAll } from '../support/fleet.js';
import { fileSandboxes, type ServerProcess, sleep } from '../support/processes.js';

/**
 * Contract 19, health and failover: one replica dies mid-flood (its open calls' connections reset, then its port
 * refuses), another answers `500` to every call. With one attempt per request, a failure that spent the attempt would
 * fail the request; failover inside the attempt keeps every one alive. Each replica records the calls it saw, so what
 * was sent twice is counted where it arrived. The dead one, started again on its port, is tried after its cool-down.
 */

const newBox = fileSandboxes();
const replicas: FakeReplica[] = [];
const servers: ServerProcess[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop('SIGKILL');
  for (const replica of replicas.splice(0)) await replica.close();
});

const flood = 120;

describe('a fleet with a replica that dies and one that fails (contract 19)', { timeout: 120_000 }, () => {
  it('completes every request of a flood while one replica is killed and another answers 500, sends again only what the dead one had open, and tries the dead one again after its cool-down', async () => {
    const [doomed, failing, healthy1, healthy2] = await startFleet(
      ['doomed', 'failing', 'healthy1', 'healthy2'].map((name) => ({ name, places: 4, behaviour: { delayMs: 150 } })),
    );
    if (doomed === undefined || failing === undefined || healthy1 === undefined || healthy2 === undefined)
      throw new Error('four replicas');
    replicas.push(doomed, failing, healthy1, healthy2);
    const all = [doomed, failing, healthy1, healthy2];
    failing.set({ fail500: 1 });
    const members = all.map((replica) => ({ replica, places: 4 }));
    // One attempt: only failover inside it can save a request whose call failed.
    const { server, key, url } = await serveFleet(
      newBox('airs-fleet-failover'),
      fleetConfig([fleetModel('fleet', members)], 1),
    );
    servers.push(server);

    const prompts = Array.from({ length: flood }, (_, i) => `failover request ${i}`);
    const submitted = submitAll([url], key, 'fleet', prompts, 24);
    // Killed while it has calls open, so that those calls are cut mid-way.
    const deadline = Date.now() + 20_000;
    while (doomed.inFlight() === 0 && Date.now() < deadline) await sleep(5);
    expect(doomed.inFlight(), 'the doomed replica never got a call').toBeGreaterThan(0);
    await doomed.kill();
    const cut = new Set(doomed.openAtKill().map((call) => call.prompt));
    expect(cut.size).toBeGreaterThan(0);

    const settled = await settleAll(url, key, await submitted, 90_000);
    expect(statusCounts(settled), logOf(server)).toEqual({ completed: flood });
    // Each answer came from a replica that answered, never from the failing one.
    for (const one of settled) expect(one.response).toMatch(/^healthy[12] says: failover request \d+$/);
    expect(failing.stats().errors, 'the failing replica was never called').toBeGreaterThan(0);

    // Answered once each; a prompt called more than once had a call cut on the dead one or refused with a 500.
    const calls = all.flatMap((replica) => replica.calls());
    const answeredTimes = new Map<string, number>();
    for (const call of calls)
      if (call.end === 'answered') answeredTimes.set(call.prompt, (answeredTimes.get(call.prompt) ?? 0) + 1);
    for (const prompt of prompts) expect(answeredTimes.get(prompt), prompt).toBe(1);
    for (const prompt of prompts) {
      const its = calls.filter((call) => call.prompt === prompt);
      const failedOnes = its.filter((call) => call.end !== 'answered');
      expect(its.length, prompt).toBe(failedOnes.length + 1);
      for (const failed of failedOnes) expect(failed.end === 'error' || cut.has(prompt), prompt).toBe(true);
    }
    // Where the calls carry the request's id, the same holds per id: one id, one prompt, answered once.
    if (calls.every((call) => call.requestId !== undefined)) {
      const promptsOfId = new Map<string, Set<string>>();
      for (const call of calls)
        promptsOfId.set(
          call.requestId as string,
          (promptsOfId.get(call.requestId as string) ?? new Set()).add(call.prompt),
        );
      for (const [id, its] of promptsOfId) expect(its.size, id).toBe(1);
      const answeredIds = calls.filter((call) => call.end === 'answered').map((call) => call.requestId);
      expect(new Set(answeredIds).size).toBe(answeredIds.length);
    }
    // The dead one's dropped calls are exactly those it had open when it died.
    expect(doomed.calls().filter((call) => call.end === 'dropped').length).toBe(cut.size);
    // The failing one is out of service after its failures in a row: it got far fewer than its share.
    expect(failing.calls().length).toBeLessThan(flood / 4);

    // Started again on its port, it gets calls once its cool-down (10 s at first) is over.
    await doomed.restart();
    const before = doomed.calls().length;
    const trickleUntil = Date.now() + 40_000;
    let sent = 0;
    const trickle: string[] = [];
    while (doomed.calls().length === before && Date.now() < trickleUntil) {
      trickle.push(...(await submitAll([url], key, 'fleet', [`after restart ${sent++}`], 1)));
      await sleep(250);
    }
    expect(doomed.calls().length, logOf(server)).toBeGreaterThan(before);
    expect(statusCounts(await settleAll(url, key, trickle, 30_000))).toEqual({ completed: trickle.length });
  });
});
