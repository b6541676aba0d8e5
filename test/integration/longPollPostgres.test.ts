import { afterAll, describe, expect, it } from 'vitest';
import { readLog } from '../multiServer/theLog.js';
import { sleep } from '../support/processes.js';
import { servedAt, submit } from '../support/submit.js';
import { type Nodes, startNodes, useTestCluster } from './postgresFaults.js';

/**
 * Long polls across two `airs serve` nodes on one PostgreSQL: a poll held on node A for a request that node B runs is
 * answered soon after B commits its completion (LISTEN/NOTIFY, as for waiting creates), long before its wait ends.
 * Asserted with postgresWakeups.test.ts's generous bound (1 s: a shared, loaded machine), the figures printed.
 */
useTestCluster();

const rounds = 4;

describe('Long polls across two nodes on one PostgreSQL', { timeout: 90_000 }, () => {
  let nodes: Nodes;
  afterAll(() => nodes?.dispose());

  it('answers a poll held on one node once the other node completes its request', async () => {
    // One worker per node: node A's is held by a slow request, so whatever A queues can only run on B.
    nodes = await startNodes(2, { concurrency: 1 }, 'airs-longpoll-pg');
    const [a] = nodes.servers.map((server) => server.url) as [string, string];
    nodes.upstream.setDelay((prompt) => (prompt === 'slow' ? 30_000 : 500));
    const slowId = await submit(servedAt(a), nodes.key, { model: 'llm', prompt: 'slow' });
    while (nodes.upstream.callsFor('slow') === 0) await sleep(20);

    const polled: { reqId: string; answeredAt: number }[] = [];
    for (let i = 0; i < rounds; i++) {
      const reqId = await submit(servedAt(a), nodes.key, { model: 'llm', prompt: `run on B ${i}` });
      const answer = await fetch(`${a}/v1/ai?req_id=${reqId}`, {
        headers: { authorization: `Bearer ${nodes.key}`, prefer: 'wait=30' },
      });
      const answeredAt = Date.now();
      expect(answer.status).toBe(200);
      expect(answer.headers.get('preference-applied')).toBe('wait=30');
      expect(((await answer.json()) as { status: string }).status).toBe('completed');
      polled.push({ reqId, answeredAt });
    }

    const log = await readLog(nodes);
    const eventOf = (reqId: string, type: string) => log.eventsOf(reqId).find((e) => e.type === type);
    const nodeA = eventOf(slowId, 'RequestProcessingStarted')?.owner;
    const latencies = polled.map(({ reqId, answeredAt }) => {
      expect(eventOf(reqId, 'RequestProcessingStarted')?.owner, `${reqId} run on B`).not.toBe(nodeA);
      return answeredAt - Date.parse(eventOf(reqId, 'RequestCompleted')?.at ?? '');
    });
    console.info(`long polls: completed on B to the poll answered on A: ${latencies.join(', ')} ms`);
    for (const latency of latencies) expect(latency).toBeLessThan(1_000);
  });
});
