import OpenAI from 'openai';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountWithKey } from '../multiServer/clusterTarget.js';
import { startPostgresNodes } from '../multiServer/postgresCluster.js';
import { allFiles, type ChatLine, chatLines, customIdCounts, linesOfFile, untilEnded } from '../support/batchServer.js';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';
import { stopTestCluster, testCluster } from '../support/postgres.js';
import { sleep } from '../support/processes.js';

/**
 * Contract 16 on PostgreSQL: "every node serves every file and works on any batch's lines; exactly one node
 * finalizes". Three `airs serve` nodes on one database run a batch of lines on a model behind a fake upstream that
 * counts its calls; the node that holds the batch's lease is killed with SIGKILL while lines run (its own model calls
 * in flight). Another node takes the batch over once the lease lapses (`processing.leaseSeconds: 2`) and ends it:
 * one `BatchEnded` in the log (`airs replay --batch`), one output file, every line once, no line called beyond the
 * attempt rules.
 */

beforeAll(() => testCluster().then(() => {}), 120_000);
afterAll(() => stopTestCluster(), 60_000);

type BatchRow = { status: string; owner: string | null };

describe('a batch on three PostgreSQL nodes', { timeout: 180_000 }, () => {
  it('is ended by exactly one node after the node holding it is killed while its lines run', async () => {
    const upstream = await startFakeOpenAi({ delayMs: 200 });
    const concurrency = 4;
    const maxAttempts = 2;
    const cluster = await startPostgresNodes(
      {
        models: [{ id: 'llm', provider: 'openai', baseUrl: upstream.baseUrl, upstreamModel: 'tiny', maxRetries: 0 }],
        processing: { concurrency, maxAttempts, leaseSeconds: 2 },
      },
      3,
    );
    const db = new pg.Client({ connectionString: cluster.databaseUrl });
    await db.connect();
    try {
      const { key } = await accountWithKey(cluster, 'pg@example.com', 'enterprise');
      const clientOf = (url: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 });
      const first = cluster.servers[0];
      if (first === undefined) throw new Error('no node');

      const total = 60;
      const lines = chatLines(total, 'llm', 'pg');
      const file = await clientOf(first.url).files.create({
        file: new File([`${lines.map((line) => JSON.stringify(line)).join('\n')}\n`], 'pg.jsonl'),
        purpose: 'batch',
      });
      const batchId = (
        await clientOf(first.url).batches.create({
          input_file_id: file.id,
          endpoint: '/v1/chat/completions',
          completion_window: '24h',
        })
      ).id;

      // Lines running (some called already, not all ended), and a node holding the batch's lease.
      const row = async (): Promise<BatchRow> => {
        const result = await db.query<BatchRow>(
          `SELECT state->'state'->>'status' AS status, state->'state'->'context'->>'owner' AS owner
             FROM batches WHERE batch_id = $1`,
          [batchId],
        );
        return result.rows[0] ?? { status: 'none', owner: null };
      };
      let holder: BatchRow;
      for (;;) {
        holder = await row();
        const called = lines.filter((line) => upstream.calls(promptOf(line)) > 0).length;
        if (holder.status === 'in_progress' && holder.owner !== null && called >= 12) break;
        if (holder.status !== 'validating' && holder.status !== 'in_progress')
          throw new Error(`batch ${batchId} is ${holder.status} before a node could be killed`);
        await sleep(20);
      }
      const pid = Number(/^batches-(\d+)-/.exec(holder.owner ?? '')?.[1]);
      const victim = cluster.servers.find((server) => server.child.pid === pid);
      if (victim === undefined) throw new Error(`no node has pid ${pid} (owner ${holder.owner})`);
      await victim.stop('SIGKILL');
      const calledAtKill = lines.filter((line) => upstream.calls(promptOf(line)) > 0).length;
      expect(calledAtKill).toBeLessThan(total);

      const survivor = cluster.servers.find((server) => server !== victim);
      if (survivor === undefined) throw new Error('no node left');
      const client = clientOf(survivor.url);
      const ended = await untilEnded(client, batchId);
      expect(ended.status).toBe('completed');
      expect(ended.request_counts).toEqual({ total, completed: total, failed: 0 });
      expect(ended.error_file_id).toBeNull();
      const output = await linesOfFile(client, ended.output_file_id);
      const counts = customIdCounts(output);
      expect(counts.size).toBe(total);
      expect([...counts.values()].every((count) => count === 1)).toBe(true);
      const outputs = (await allFiles(client)).filter((each) => each.purpose === 'batch_output');
      expect(outputs.map((each) => each.id)).toEqual([ended.output_file_id]);

      // Attempt rules: at most maxAttempts calls a line; only the killed node's lines in flight are called again.
      const calls = lines.map((line) => upstream.calls(promptOf(line)));
      expect(Math.max(...calls)).toBeLessThanOrEqual(maxAttempts);
      expect(Math.min(...calls)).toBe(1);
      expect(calls.filter((count) => count > 1).length).toBeLessThanOrEqual(concurrency);

      // Exactly one node ended it, and not the one killed.
      const replay = await cluster.cli(['replay', '--batch', batchId, '--json']);
      expect(replay.code, replay.stderr).toBe(0);
      const events = (JSON.parse(replay.stdout) as { events: { type: string; owner?: string; batchId?: string }[] })
        .events;
      const ends = events.filter((event) => event.type === 'BatchEnded');
      expect(ends).toHaveLength(1);
      expect(ends[0]?.owner).not.toBe(holder.owner);
      expect(events.filter((event) => event.type === 'BatchFinalizing')).toHaveLength(1);
      expect(events.filter((event) => event.type === 'RequestQueued')).toHaveLength(total);
    } finally {
      await db.end();
      await cluster.dispose();
      await upstream.close();
    }
  });
});

const promptOf = (line: ChatLine) => line.body.messages[0]?.content ?? '';
