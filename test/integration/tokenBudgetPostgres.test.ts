import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { type Cluster, clusterJson } from '../multiServer/clusterTarget.js';
import { type CountingUpstream, startCountingUpstream } from '../multiServer/countingUpstream.js';
import { readLog } from '../multiServer/theLog.js';
import { testCluster } from '../support/postgres.js';
import { runCli, type Sandbox, type ServerProcess, sandbox, startServer } from '../support/processes.js';
import { unlimited, useTestCluster } from './postgresFaults.js';

/**
 * One token budget held by two `airs serve` nodes on one PostgreSQL (contract 21): callers submit to both at once
 * until both refuse with `insufficient_quota`. The tokens counted equal the tokens of the completed requests in the
 * log, and the budget is overspent by no more than the requests in flight when it was reached.
 */
useTestCluster();

const budget = 200;

type Nodes = Cluster & { readonly url: string; readonly upstream: CountingUpstream; readonly key: string };

const startNodes = async (): Promise<Nodes> => {
  const postgres = await testCluster();
  const url = await postgres.createDatabase();
  const upstream = await startCountingUpstream();
  upstream.setDelay(() => 100);
  const plain: Sandbox = sandbox('airs-token-budget-pg');
  const box: Sandbox = { ...plain, env: (extra) => plain.env({ ...extra, AIRS_DATABASE_URL: url }) };
  box.writeConfig({
    models: [{ id: 'llm', provider: 'openai', baseUrl: upstream.baseUrl, upstreamModel: 'counted', maxRetries: 0 }],
    processing: { concurrency: 4, maxAttempts: 3 },
    plans: { enterprise: { ...unlimited, tokensPerDay: budget } },
  });
  const servers: ServerProcess[] = [];
  const dispose = async () => {
    await Promise.all(servers.map((server) => server.stop('SIGKILL')));
    await upstream.close();
    box.remove();
    await postgres.dropDatabase(url);
  };
  servers.push(await startServer(box), await startServer(box));
  const cluster: Cluster = { servers, cli: (args) => runCli(box, args, { timeoutMs: 30_000 }), dispose };
  const account = await clusterJson<{ id: string }>(cluster, [
    'accounts',
    'create',
    '--email',
    'budget@example.com',
    '--plan',
    'enterprise',
  ]);
  const key = await clusterJson<{ key: string }>(cluster, ['keys', 'create', '--account', account.id]);
  return { ...cluster, url, upstream, key: key.key };
};

type Answer = { readonly status: number; readonly code?: string; readonly node: number };

describe('One token budget on two PostgreSQL nodes', { timeout: 120_000 }, () => {
  let nodes: Nodes | undefined;
  afterAll(() => nodes?.dispose());

  it('refuses on both nodes once the budget is used, counts exactly the tokens of the completed requests, and overspends by no more than the requests in flight when it was reached', async () => {
    nodes = await startNodes();
    const { servers, key } = nodes;
    const answers: Answer[] = [];
    const refusedBy = new Set<number>();
    // Sixteen callers, each submitting to the nodes in turn until both nodes have refused it with insufficient_quota.
    let sent = 0;
    const caller = async () => {
      while (refusedBy.size < 2 && sent < 2_000) {
        const n = sent++;
        const node = n % 2;
        const response = await fetch(`${servers[node]?.url}/v1/ai`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'llm', prompt: `call ${n}` }),
        });
        const body = (await response.json()) as { error?: { code: string } };
        answers.push({ status: response.status, code: body.error?.code, node });
        if (body.error?.code === 'insufficient_quota') refusedBy.add(node);
        else await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    await Promise.all(Array.from({ length: 16 }, caller));
    expect(refusedBy).toEqual(new Set([0, 1]));
    expect(answers.every((a) => a.status === 202 || a.code === 'insufficient_quota')).toBe(true);

    // Every accepted request ends (work accepted finishes), then the log is read.
    const accepted = answers.filter((a) => a.status === 202).length;
    let log = await readLog(nodes);
    for (let i = 0; i < 100 && log.events.filter((e) => e.type === 'RequestCompleted').length < accepted; i++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      log = await readLog(nodes);
    }
    const completions = log.events.filter((e) => e.type === 'RequestCompleted') as ((typeof log.events)[number] & {
      inputTokens: number;
      outputTokens: number;
    })[];
    expect(completions).toHaveLength(accepted);
    const used = completions.reduce((sum, e) => sum + e.inputTokens + e.outputTokens, 0);

    // Counted exactly: the store's day bucket holds the tokens of every completion, whichever node wrote it.
    const client = new pg.Client({ connectionString: nodes.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ tokens: string }>("SELECT tokens FROM token_use WHERE kind = 'day'");
      expect(rows.map((row) => Number(row.tokens))).toEqual([used]);
    } finally {
      await client.end();
    }

    // The budget was reached by the completion that took the sum to it; the requests queued before it that ended after
    // it were in flight then. The sum overspends by at most their tokens.
    let sum = 0;
    let reachedSeq = 0;
    for (const event of completions) {
      sum += event.inputTokens + event.outputTokens;
      if (sum >= budget) {
        reachedSeq = event.seq;
        break;
      }
    }
    expect(reachedSeq).toBeGreaterThan(0);
    const queuedAt = new Map(log.events.filter((e) => e.type === 'RequestQueued').map((e) => [e.reqId, e.seq]));
    const inFlight = completions.filter((e) => e.seq > reachedSeq && (queuedAt.get(e.reqId) ?? 0) < reachedSeq);
    const queuedAfter = completions.filter((e) => (queuedAt.get(e.reqId) ?? 0) > reachedSeq);
    console.info(
      `token budget on two nodes: ${accepted} accepted, ${used} tokens used of ${budget}; ${inFlight.length} in flight when it was reached, ${queuedAfter.length} queued by submits that read the counts just before`,
    );
    expect(used).toBeGreaterThanOrEqual(budget);
    // Nothing is accepted once the budget is reached, on either node, but by a submit that read the counts just
    // before the reaching completion was committed: at most one per caller, within a moment of it.
    expect(queuedAfter.length).toBeLessThanOrEqual(16);
    const reachedAt = Date.parse(completions.find((e) => e.seq === reachedSeq)?.at ?? '');
    for (const event of queuedAfter) {
      const queued = log.eventsOf(event.reqId ?? '').find((e) => e.type === 'RequestQueued');
      expect(Date.parse(queued?.at ?? '') - reachedAt).toBeLessThan(1_000);
    }
  });
});
