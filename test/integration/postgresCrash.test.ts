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

// Issue 22: PostgreSQL crashes (SIGKILL of its postmaster) while two nodes take a burst of submits, and is started
// again: nothing acknowledged is lost, nothing is completed twice, and the nodes come back by themselves.
useTestCluster();

describe('PostgreSQL killed during a burst of submits (SIGKILL of the postmaster), then started again', {
  timeout: 60_000,
}, () => {
  let nodes: Nodes;
  afterAll(() => nodes?.dispose());

  it('acknowledges nothing it loses: every 202 is completed exactly once afterwards, calls during the outage get 503 (never a 500), and the nodes come back by themselves', async () => {
    nodes = await startNodes(2, { concurrency: 8 });
    nodes.upstream.setDelay(20);
    const load = burst(nodes, 16, 'crash');
    await sleep(1_000);
    const killedAt = Date.now();
    await nodes.postgres.killPostmaster();
    await sleep(1_000);
    nodes.postgres.startServer();
    const restartedAt = Date.now();
    const readyAfterMs = await untilReady(nodes);
    await sleep(500);
    const answers = await load.stop();

    const counts = tally(answers);
    const acknowledged = answers.flatMap((answer) => (answer.status === 202 ? [answer.reqId as string] : []));
    console.info(
      `SIGKILL of the postmaster during a burst: answers ${JSON.stringify(counts)}; ready ${readyAfterMs} ms after the restart (the database was away ${restartedAt - killedAt} ms)`,
    );
    expect(Object.keys(counts).sort()).toEqual(['202', '503']);
    // Acknowledged before the crash, refused during it, acknowledged again after it.
    expect(answers.some((answer) => answer.status === 202 && answer.at < killedAt)).toBe(true);
    expect(answers.some((answer) => answer.status === 503)).toBe(true);
    expect(answers.some((answer) => answer.status === 202 && answer.at > restartedAt)).toBe(true);
    expect(await untilListening(nodes)).toBe(2);
    const log = await expectEveryAcknowledgedCompletedOnce(nodes, acknowledged);
    // Each request's model was called once per attempt (a retry after the crash is a new attempt, never an overlap).
    expect(nodes.upstream.overlaps()).toEqual([]);
    expect(Object.keys(log.states).length).toBeGreaterThanOrEqual(acknowledged.length);
  });
});
