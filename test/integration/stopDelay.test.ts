import { describe, expect, it } from 'vitest';
import {
  createAccountWithKey,
  fileSandboxes,
  type ServerProcess,
  sleep,
  startServer,
  submit,
} from '../support/processes.js';

/**
 * Stopping as load balancers expect (`shutdownDelaySeconds`): from SIGTERM or SIGINT on, the port stays open for the
 * delay and every call, `/readyz` included, answers 503; then the drain, the port closes, and the last log line says
 * the server stopped and why.
 */

const newBox = fileSandboxes();

/** What a call to `url` gets: its status, or the network error's code once nothing listens. */
const statusOf = async (url: string): Promise<number | string> => {
  try {
    return (await fetch(url)).status;
  } catch (error) {
    return String((error as Error & { cause?: { code?: string } }).cause?.code ?? error);
  }
};

/** The server's log lines (JSON on stderr), parsed. */
const logLines = (server: ServerProcess): Array<Record<string, unknown>> =>
  server
    .stderr()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

/** Sends `signal` and waits 100 ms; `exited` resolves with the exit status and how long the exit took. */
const stopAndWait = async (server: ServerProcess, signal: NodeJS.Signals) => {
  const signalledAt = Date.now();
  const exited = server.stop(signal).then((code) => ({ code, afterMs: Date.now() - signalledAt }));
  await sleep(100);
  return { exited, signalledAt };
};

describe('Stopping like load balancers expect', { timeout: 60_000 }, () => {
  it('by default keeps the port open for 2 s after SIGTERM, answering 503 on /readyz and /v1/ai (healthz 200), then closes it and logs "stopped" with the signal last', async () => {
    const box = newBox('airs-stop-delay');
    // Raw text: the test support's `shutdownDelaySeconds: 0` is not added, so the built-in default applies.
    box.writeConfig('{}');
    const { key } = await createAccountWithKey(box, 'delay@example.com');
    const server = await startServer(box);
    expect(await statusOf(`${server.url}/readyz`)).toBe(200);

    const { exited, signalledAt } = await stopAndWait(server, 'SIGTERM');
    const probe = await fetch(`${server.url}/readyz`);
    expect(probe.status).toBe(503);
    expect(probe.headers.get('retry-after')).toBe('5');
    expect(await probe.json()).toMatchObject({ error: { code: 'server_error' } });
    const late = await submit(server.url, key, 'echo', 'too late');
    expect(late.status).toBe(503);
    expect(late.headers.get('retry-after')).toBe('5');
    expect(late.body).toMatchObject({ error: { code: 'server_error' } });
    expect(await statusOf(`${server.url}/healthz`)).toBe(200);

    // Until the port closes every probe is answered 503, never refused, and the port stays open the whole delay.
    const seen: Array<[number, number | string]> = [];
    for (;;) {
      const status = await statusOf(`${server.url}/readyz`);
      seen.push([Date.now() - signalledAt, status]);
      if (status !== 503 || Date.now() - signalledAt > 20_000) break;
      await sleep(50);
    }
    const [closedAfterMs, closedWith] = seen.at(-1) ?? [0, 0];
    expect(closedWith).toBe('ECONNREFUSED');
    expect(closedAfterMs).toBeGreaterThanOrEqual(2_000);
    expect(seen.slice(0, -1).every(([, status]) => status === 503)).toBe(true);

    const { code, afterMs } = await exited;
    expect(code).toBe(0);
    expect(afterMs).toBeGreaterThanOrEqual(2_000);
    expect(logLines(server).at(-1)).toMatchObject({ msg: 'stopped', reason: 'SIGTERM' });
  });

  it('with shutdownDelaySeconds 0 closes the port at once on SIGINT, and logs "stopped" with the signal last', async () => {
    const box = newBox('airs-stop-nodelay');
    box.writeConfig({ shutdownDelaySeconds: 0 });
    await createAccountWithKey(box, 'nodelay@example.com');
    const server = await startServer(box);
    expect(await server.stop('SIGINT')).toBe(0);
    expect(await statusOf(`${server.url}/readyz`)).toBe('ECONNREFUSED');
    expect(logLines(server).at(-1)).toMatchObject({ msg: 'stopped', reason: 'SIGINT' });
    // An idle server has nothing to drain: by its own log, it stopped before the default delay (2 s) that began with
    // its "stopping" line would even have ended.
    const stopping = logLines(server).find((line) => String(line.msg).startsWith('stopping:'));
    expect(stopping?.delaySeconds).toBe(0);
    expect(logLines(server).at(-1)?.time).toBeLessThan((stopping?.time as number) + 2_000);
  });

  it('under --processes 2 holds the shared port for the delay answering 503, then every process stops and the primary logs "stopped" last', async () => {
    const box = newBox('airs-stop-many');
    box.writeConfig({ shutdownDelaySeconds: 1 });
    const { key } = await createAccountWithKey(box, 'many@example.com');
    const server = await startServer(box, { args: ['--processes', '2'] });
    const { exited } = await stopAndWait(server, 'SIGTERM');
    // Several calls: the primary hands connections to either process, and each must answer 503.
    for (let i = 0; i < 4; i++) {
      expect(await statusOf(`${server.url}/readyz`)).toBe(503);
      expect((await submit(server.url, key, 'echo', 'too late')).status).toBe(503);
    }
    const { code, afterMs } = await exited;
    expect(code).toBe(0);
    expect(afterMs).toBeGreaterThanOrEqual(1_000);
    expect(await statusOf(`${server.url}/readyz`)).toBe('ECONNREFUSED');
    const lines = logLines(server);
    const stopped = lines.filter((line) => line.msg === 'stopped');
    // Each server process (its lines carry its pid) said so, then the primary (no pid), last.
    expect(stopped.filter((line) => line.pid !== undefined && line.reason === 'SIGTERM')).toHaveLength(2);
    expect(lines.at(-1)).toMatchObject({ msg: 'stopped', reason: 'SIGTERM' });
    expect(lines.at(-1)?.pid).toBeUndefined();
  });
});
