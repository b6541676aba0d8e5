import { afterAll, describe, expect, it } from 'vitest';
import { sleep } from '../support/processes.js';
import {
  burst,
  expectEveryAcknowledgedCompletedOnce,
  type Nodes,
  startNodes,
  tally,
  untilListening,
  untilReady,
  useTestCluster,
} from './postgresFaults.js';

// Issue 22: the database ends a node's sessions (pg_terminate_backend, as an operator or a failover does) while the
// node commits batches of submits: each caller of a batch cut off gets 503, or its answer, never a 202 for a request
// that does not exist.
useTestCluster();

describe('pg_terminate_backend of a node’s sessions during a burst of submits', { timeout: 120_000 }, () => {
  let nodes: Nodes;
  afterAll(() => nodes?.dispose());

  it('gives each caller of a cut-off batch a 503 or its answer, never a false 202: every acknowledged request exists and completes once', async () => {
    nodes = await startNodes(1, { concurrency: 8 });
    const load = burst(nodes, 24, 'terminated');
    await sleep(500);
    const ended: number[] = [];
    for (let i = 0; i < 10; i++) {
      ended.push(await nodes.postgres.terminateAirsSessions(nodes.url));
      await sleep(150);
    }
    const readyAfterMs = await untilReady(nodes);
    await sleep(300);
    const answers = await load.stop();

    const counts = tally(answers);
    const acknowledged = answers.flatMap((answer) => (answer.status === 202 ? [answer.reqId as string] : []));
    console.info(
      `pg_terminate_backend ×10 during a burst: sessions ended ${ended.join(', ')}; answers ${JSON.stringify(counts)}; ready ${readyAfterMs} ms after the last`,
    );
    expect(ended.filter((n) => n > 0).length).toBeGreaterThanOrEqual(5);
    expect(Object.keys(counts).filter((status) => status !== '202' && status !== '503')).toEqual([]);
    expect(acknowledged.length).toBeGreaterThan(0);
    expect(await untilListening(nodes)).toBe(1);
    await expectEveryAcknowledgedCompletedOnce(nodes, acknowledged);
    // Back without a restart: a new submit is acknowledged and completed.
    const after = await fetch(`${nodes.servers[0]?.url}/v1/ai`, {
      method: 'POST',
      headers: { authorization: `Bearer ${nodes.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'llm', prompt: 'after the terminations' }),
    });
    expect(after.status).toBe(202);
  });
});
