import { describe, expect, it } from 'vitest';
import {
  createAccountWithKey,
  fileSandboxes,
  poll,
  type Sandbox,
  sleep,
  startServer,
  submit,
} from '../support/processes.js';

const newBox = fileSandboxes();

const withLevel = (box: Sandbox, level: string): Sandbox => ({
  ...box,
  env: (extra) => box.env({ ...extra, LOG_LEVEL: level }),
});

describe('Access lines in the log', { timeout: 60_000 }, () => {
  it('at debug, every answered call is one JSON line with method, path, req_id, status and latency, and never the key or the prompt', async () => {
    const box = newBox('airs-access');
    const { key } = await createAccountWithKey(box, 'access@example.com');
    const server = await startServer(withLevel(box, 'debug'));
    const accepted = await submit(server.url, key, 'echo', 'a secret prompt');
    const reqId = accepted.body.request_id as string;
    await poll(server.url, key, reqId);
    await sleep(200);
    const lines = server
      .stderr()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const answered = lines.filter((line) => line.msg === 'answered');
    expect(answered).toEqual([
      expect.objectContaining({ level: 20, method: 'POST', path: '/v1/ai', status: 202, ms: expect.any(Number) }),
      expect.objectContaining({ level: 20, method: 'GET', path: '/v1/ai', reqId, status: 200 }),
    ]);
    expect(server.stderr()).not.toContain(key);
    expect(server.stderr()).not.toContain('a secret prompt');
    expect(await server.stop('SIGTERM')).toBe(0);
  });

  it('at the default level (info), calls write no access lines', async () => {
    const box = newBox('airs-access-info');
    const { key } = await createAccountWithKey(box, 'quiet@example.com');
    const server = await startServer(box);
    await submit(server.url, key, 'echo', 'quiet');
    await sleep(200);
    expect(server.stderr()).not.toContain('"answered"');
    expect(await server.stop('SIGTERM')).toBe(0);
  });
});
