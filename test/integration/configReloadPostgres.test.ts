import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';
import { stopTestCluster, testCluster } from '../support/postgres.js';
import {
  createAccountWithKey,
  fileSandboxes,
  poll,
  runCli,
  type Sandbox,
  type ServerProcess,
  sleep,
  startServer,
  stderrShowing,
  submit,
} from '../support/processes.js';

/* Contract 19 on several nodes: `airs models reload` reaches every node of one PostgreSQL database. */

const newBox = fileSandboxes();
const started: ServerProcess[] = [];
afterEach(async () => {
  for (const server of started.splice(0)) await server.stop('SIGKILL');
});
afterAll(() => stopTestCluster(), 60_000);

const openAiModel = (id: string, baseUrl: string) => ({ id, provider: 'openai', baseUrl, upstreamModel: 'served' });

/** Two boxes (each node's own working directory and config file) on one database, as two machines would be. */
const onDatabase = (box: Sandbox, url: string): Sandbox => ({
  ...box,
  env: (extra) => box.env({ ...extra, AIRS_DATABASE_URL: url }),
});

describe('airs models reload on PostgreSQL (contract 19)', { timeout: 90_000 }, () => {
  it('has every node of the database read its own config file again and apply it', async () => {
    const fake = await startFakeOpenAi({ delayMs: 10 });
    try {
      const url = await (await testCluster()).createDatabase();
      const boxes = [onDatabase(newBox('airs-reload-node-a'), url), onDatabase(newBox('airs-reload-node-b'), url)];
      for (const box of boxes) box.writeConfig({ models: [openAiModel('one', fake.baseUrl)] });
      const first = boxes[0] as Sandbox;
      const nodes: ServerProcess[] = [];
      for (const box of boxes) {
        const node = await startServer(box, { timeoutMs: 40_000 });
        started.push(node);
        nodes.push(node);
      }
      const { key } = await createAccountWithKey(first, 'nodes@example.com', 'scale');

      for (const box of boxes)
        box.writeConfig({ models: [openAiModel('one', fake.baseUrl), openAiModel('two', fake.baseUrl)] });
      // Asked from one node's machine: the database tells the other.
      const asked = await runCli(first, ['models', 'reload']);
      expect(asked.code, asked.stderr).toBe(0);
      expect(asked.stdout).toContain('asked every server of the database');
      for (const node of nodes) {
        const log = await stderrShowing(node, /config reloaded/);
        expect(log).toMatch(/"cause":"airs models reload".*"added":\["two"\]/);
        const answer = await submit(node.url, key, 'two', `on ${node.url}`);
        expect(answer.status).toBe(202);
        let view = await poll(node.url, key, String(answer.body.request_id));
        for (let i = 0; i < 100 && view.status === 200 && view.body.status === 'queued'; i++) {
          await sleep(100);
          view = await poll(node.url, key, String(answer.body.request_id));
        }
        expect(view).toMatchObject({ status: 200, body: expect.objectContaining({ status: 'completed' }) });
      }
    } finally {
      await fake.close();
    }
  });
});
