import { afterEach, describe, expect, it } from 'vitest';
import { createAccountWithKey, fileSandboxes, type ServerProcess, startServer, submit } from '../support/processes.js';

const newBox = fileSandboxes();

/** The server's log lines (JSON on stderr), parsed. */
const logLines = (server: ServerProcess): Array<Record<string, unknown>> =>
  server
    .stderr()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
const started: ServerProcess[] = [];
afterEach(async () => {
  for (const server of started.splice(0)) await server.stop('SIGKILL');
});

/**
 * `airs serve` stopping on SIGTERM (through the CLI) answers a held long poll at once with what it has, so that the
 * drain is not held up by a poll that asked to wait a minute.
 */
describe('A long poll when the server stops', { timeout: 60_000 }, () => {
  it('is answered at once with the current state, Connection: close and no Preference-Applied on SIGTERM', async () => {
    const box = newBox('airs-longpoll-sigterm');
    box.writeConfig({
      models: [{ id: 'slow', provider: 'echo', delayMs: 60_000, timeoutMs: 120_000 }],
      shutdownDelaySeconds: 5,
      shutdownGraceSeconds: 1,
    });
    // At debug, every answered call is logged: the order of the poll's answer and the stop is read from the log.
    const server = await startServer(box, { env: { LOG_LEVEL: 'debug' } });
    started.push(server);
    const { key } = await createAccountWithKey(box, 'sigterm@example.com');
    const { body } = await submit(server.url, key, 'slow', 'never answered in time');
    const reqId = (body as { request_id: string }).request_id;
    const polled = fetch(`${server.url}/v1/ai?req_id=${reqId}`, {
      headers: { authorization: `Bearer ${key}`, prefer: 'wait=60' },
    });
    // Held: nothing comes back for a while.
    const early = await Promise.race([polled.then(() => 'answered'), new Promise((r) => setTimeout(r, 1_000, 'held'))]);
    expect(early).toBe('held');

    const exited = server.stop('SIGTERM');
    const answer = await polled;

    expect(answer.status).toBe(200);
    expect(((await answer.json()) as { status: string }).status).toBe('queued');
    expect(answer.headers.get('preference-applied')).toBeNull();
    expect(answer.headers.get('connection')).toBe('close');
    expect(await exited).not.toBeNull();
    // At once, not after the 60 s asked, nor once the stop's delay (5 s) is over: by the server's own log, the poll
    // was answered before the delay that began with the signal ended.
    const lines = logLines(server);
    const stopping = lines.find((line) => String(line.msg).startsWith('stopping:'));
    const answered = lines.find((line) => line.msg === 'answered' && line.method === 'GET' && line.reqId === reqId);
    expect(stopping?.delaySeconds).toBe(5);
    expect(answered?.time).toBeLessThan((stopping?.time as number) + 5_000);
  });
});
