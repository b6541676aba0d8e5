import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { poll, sleep, submit } from '../support/processes.js';
import { accountWithKey, type Cluster, type ClusterTarget } from './clusterTarget.js';
import { type CountingUpstream, startCountingUpstream } from './countingUpstream.js';
import { verifyLog } from './theLog.js';

/** The free plan's bound of requests being processed at once in these clusters (contract 18: `maxProcessing`). */
const maxProcessing = 2;
/** Workers of each server: far more than the bound, so that only the bound keeps account A from taking them all. */
const concurrency = 8;
/** Account A's requests: more than every server's workers together. */
const floodSize = 12;

/** Waits until `check` holds, polling every 100 ms, for at most `timeoutMs` (then the assertion after it fails). */
const until = async (check: () => boolean, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs;
  while (!check() && Date.now() < deadline) await sleep(100);
};

/**
 * Contract 18 seen from outside: account A (free plan) floods a slow model with more requests than every server's
 * workers together; it is processed `maxProcessing` at a time, in all servers together, so account B's request of the
 * same model starts at once and is answered while every one of A's calls is still open. On today's main without the
 * bound, A held every worker and B waited for one of A's slow calls to end.
 */
export const describeTenantScenarios = (target: ClusterTarget, servers: number) => {
  describe(`one account cannot hold every worker (${target.name}, ${servers} server${servers > 1 ? 's' : ''})`, {
    timeout: 60_000,
  }, () => {
    let upstream: CountingUpstream;
    let cluster: Cluster;
    const urlOf = (i: number) => cluster.servers[i % cluster.servers.length]?.url ?? '';

    beforeAll(async () => {
      upstream = await startCountingUpstream();
      // A's calls answer after a minute (longer than the test); B's at once.
      upstream.setDelay((prompt) => (prompt.startsWith('slow') ? 60_000 : 0));
      cluster = await target.start(
        {
          models: [
            { id: 'llm', provider: 'openai', baseUrl: upstream.baseUrl, upstreamModel: 'counted', maxRetries: 0 },
          ],
          processing: { concurrency, leaseSeconds: 5 },
          plans: { free: { maxProcessing, submitsPerMinute: 600 } },
        },
        servers,
      );
    }, 120_000);
    afterAll(async () => {
      await cluster?.dispose();
      await upstream?.close();
    });

    it("processes a free account's flood maxProcessing at a time across every server, and starts another account's request of the same model at once", async () => {
      const a = await accountWithKey(cluster, 'flood@example.com', 'free');
      const b = await accountWithKey(cluster, 'neighbour@example.com', 'free');
      const flood = await Promise.all(
        Array.from({ length: floodSize }, (_, i) => submit(urlOf(i), a.key, 'llm', `slow ${i}`)),
      );
      expect(flood.map((answer) => answer.status)).toEqual(flood.map(() => 202));
      await until(() => upstream.openCalls() >= maxProcessing, 20_000);
      // Every server hears of every submit and has workers free: given time, each would take more than the bound.
      await sleep(1_500);
      expect(upstream.openCalls()).toBe(maxProcessing);

      const neighbour = await submit(urlOf(1), b.key, 'llm', 'quick');
      expect(neighbour.status).toBe(202);
      const reqId = String(neighbour.body.request_id);
      let answer = await poll(urlOf(0), b.key, reqId);
      // Bounded by the slow calls' minute, not by a time of its own: B either gets a worker now or after one of them.
      for (let i = 1; i < 200 && answer.body.status !== 'completed'; i++) {
        await sleep(100);
        answer = await poll(urlOf(i), b.key, reqId);
      }
      expect(answer.body).toMatchObject({ status: 'completed', response: 'upstream says: quick' });
      // Answered while each of A's calls was still open: B waited for none of them.
      expect(
        upstream
          .calls()
          .filter((call) => call.prompt.startsWith('slow'))
          .map((call) => call.end),
      ).toEqual(Array.from({ length: maxProcessing }, () => 'open'));
      expect(upstream.overlaps()).toEqual([]);

      const verified = await verifyLog(cluster);
      expect(verified.stdout).toMatch(/every view matches the log/);
      expect(verified.code).toBe(0);
    });
  });
};
