import { afterEach, describe, expect, it } from 'vitest';
import { unusedPort } from '../support/ports.js';
import {
  createAccountWithKey,
  fileSandboxes,
  type ServerProcess,
  servingPids,
  sleep,
  startServer,
} from '../support/processes.js';

const newBox = fileSandboxes();
const started: ServerProcess[] = [];
afterEach(async () => {
  for (const server of started.splice(0)) await server.stop('SIGKILL');
});

describe('airs serve --processes N (contract 17)', { timeout: 60_000 }, () => {
  it.each([
    ['a fixed port', true],
    ['PORT=0', false],
  ])('serves one URL from every process on %s, started through the CLI', async (_label, fixed) => {
    const box = newBox('airs-processes');
    box.writeConfig({});
    const port = fixed ? await unusedPort() : 0;
    const server = await startServer(box, {
      args: ['--processes', '2'],
      env: { PORT: String(port), LOG_LEVEL: 'debug' },
      timeoutMs: 40_000,
    });
    started.push(server);
    if (fixed) expect(server.url).toBe(`http://127.0.0.1:${port}`);
    const { key } = await createAccountWithKey(box, 'cores@example.com');
    // Each call on a connection of its own: the primary hands connections to the processes in turn.
    const answers = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        await sleep(i * 20);
        const response = await fetch(`${server.url}/v1/ai`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', connection: 'close' },
          body: JSON.stringify({ model: 'echo', prompt: `hello ${i}` }),
        });
        return response.status;
      }),
    );
    expect(answers).toEqual(answers.map(() => 202));
    // Access lines are written asynchronously: wait for them.
    for (let i = 0; i < 50 && servingPids(server, '/v1/ai').size < 2; i++) await sleep(100);
    expect(servingPids(server, '/v1/ai').size).toBe(2);
  });
});
