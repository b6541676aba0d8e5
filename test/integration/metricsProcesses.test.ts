import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { unusedPort } from '../support/ports.js';
import { stopTestCluster, testCluster } from '../support/postgres.js';
import {
  createAccountWithKey,
  fileSandboxes,
  type Sandbox,
  type ServerProcess,
  servingPids,
  sleep,
  startServer,
} from '../support/processes.js';

/*
 * Issue 42: under `airs serve --processes N`, `/metrics` answers the sum over every process, whichever process takes
 * the scrape; the gauges read from the store are read once, not once per process.
 */

const newBox = fileSandboxes();
const started: ServerProcess[] = [];
afterEach(async () => {
  for (const server of started.splice(0)) await server.stop('SIGKILL');
});
afterAll(() => stopTestCluster(), 60_000);

/** The box's server and CLI on a fresh PostgreSQL database instead of its LMDB data directory. */
const onDatabase = async (box: Sandbox): Promise<Sandbox> => {
  const url = await (await testCluster()).createDatabase();
  return { ...box, env: (extra) => box.env({ ...extra, AIRS_DATABASE_URL: url }) };
};

const token = 'metrics-token-of-the-test-0123';

/** The value of one sample of the text format (labels in the order the server writes them), or undefined. */
const sample = (text: string, series: string): number | undefined => {
  for (const line of text.split('\n')) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return undefined;
};

/** A scrape on a connection of its own: the primary hands each connection to one of the processes in turn. */
const scrape = async (url: string) => {
  const response = await fetch(`${url}/metrics`, {
    headers: { authorization: `Bearer ${token}`, connection: 'close' },
  });
  expect(response.status).toBe(200);
  return response.text();
};

/**
 * Scrapes until an answer satisfies `wanted` (at most 60 s), each scrape bounded: a connection the primary handed to
 * a stopped (or just killed) process never gets an answer.
 */
const scrapeAnswering = async (url: string, wanted: (body: string) => boolean): Promise<string> => {
  const deadline = Date.now() + 60_000;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const response = await fetch(`${url}/metrics`, {
        headers: { authorization: `Bearer ${token}`, connection: 'close' },
        signal: AbortSignal.timeout(8_000),
      });
      last = await response.text();
      if (response.status === 200 && wanted(last)) return last;
    } catch (error) {
      if ((error as Error).name !== 'TimeoutError') throw error;
    }
    await sleep(200);
  }
  throw new Error(`no scrape answered as wanted in 60 s; the last: ${last.slice(0, 2_000)}`);
};

const call = async (url: string, key: string, method: 'GET' | 'POST', path: string, body?: unknown) => {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      connection: 'close',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

describe('GET /metrics under airs serve --processes 3 (issue 42)', { timeout: 120_000 }, () => {
  it.each([
    ['LMDB', false],
    ['PostgreSQL', true],
  ])(
    'answers the sum over every process on every scrape, and reads the store-read queue gauge once, not once per process (%s)',
    async (_store, postgres) => {
      const box = postgres ? await onDatabase(newBox('airs-metrics-sum-pg')) : newBox('airs-metrics-sum');
      box.writeConfig({
        models: [
          { id: 'echo', provider: 'echo' },
          { id: 'slow', provider: 'echo', delayMs: 60_000, timeoutMs: 120_000 },
        ],
        // Two model calls per process: 6 slow requests are taken, the rest stay queued.
        processing: { concurrency: 2 },
        metrics: { token },
      });
      const port = await unusedPort();
      const server = await startServer(box, {
        args: ['--processes', '3'],
        env: { PORT: String(port), LOG_LEVEL: 'debug' },
        timeoutMs: 60_000,
      });
      started.push(server);
      const { key } = await createAccountWithKey(box, 'sums@example.com', 'scale');

      // K echo requests, each on a connection of its own (so spread over the processes), polled until completed.
      const echoes = 9;
      const ids = await Promise.all(
        Array.from({ length: echoes }, async (_, i) => {
          await sleep(i * 30);
          const submitted = await call(server.url, key, 'POST', '/v1/ai', { model: 'echo', prompt: `sum ${i}` });
          expect(submitted.status).toBe(202);
          return submitted.body.request_id as string;
        }),
      );
      let polls = 0;
      for (const id of ids) {
        for (let tries = 0; ; tries++) {
          const polled = await call(server.url, key, 'GET', `/v1/ai?req_id=${encodeURIComponent(id)}`);
          polls++;
          expect(polled.status).toBe(200);
          if (polled.body.status === 'completed') break;
          expect(tries).toBeLessThan(200);
          await sleep(50);
        }
      }
      // Slow requests: 6 taken by the processes' workers (2 each), the rest queued.
      const slow = 12;
      for (let i = 0; i < slow; i++) {
        const submitted = await call(server.url, key, 'POST', '/v1/ai', { model: 'slow', prompt: `wait ${i}` });
        expect(submitted.status).toBe(202);
      }
      let text = '';
      for (let tries = 0; tries < 200; tries++) {
        text = await scrape(server.url);
        if (sample(text, 'airs_processing_attempts_total{model="slow"}') === 6) break;
        await sleep(100);
      }
      expect(sample(text, 'airs_processing_attempts_total{model="slow"}')).toBe(6);

      // Several scrapes, on connections of their own, so taken by different processes: each shows the same sums.
      const scrapes = 6;
      for (let i = 0; i < scrapes; i++) {
        text = await scrape(server.url);
        expect(sample(text, 'airs_metrics_processes{state="answered"}')).toBe(3);
        expect(sample(text, 'airs_metrics_processes{state="missing"}')).toBe(0);
        expect(sample(text, 'airs_processing_attempts_total{model="echo"}')).toBe(echoes);
        expect(sample(text, 'airs_processing_outcomes_total{model="echo",outcome="completed"}')).toBe(echoes);
        expect(sample(text, 'airs_processing_duration_seconds_count{model="echo"}')).toBe(echoes);
        expect(sample(text, 'airs_http_requests_total{method="POST",route="/v1/ai",status="202"}')).toBe(echoes + slow);
        expect(sample(text, 'airs_http_requests_total{method="GET",route="/v1/ai",status="200"}')).toBe(polls);
        expect(sample(text, 'airs_http_request_duration_seconds_count{method="POST",route="/v1/ai"}')).toBe(
          echoes + slow,
        );
        // Read from the store once by the process answering: 12 submitted, 6 taken, 6 queued (not 18).
        expect(sample(text, 'airs_queue_depth{model="slow"}')).toBe(slow - 6);
        // One series, not one per process.
        expect(text.match(/^airs_queue_depth\{model="slow"\} /gm)).toHaveLength(1);
      }
      // The scrapes were taken by more than one process (the access lines name each process).
      for (let i = 0; i < 50 && servingPids(server, '/metrics').size < 2; i++) await sleep(100);
      expect(servingPids(server, '/metrics').size).toBeGreaterThanOrEqual(2);
      expect(servingPids(server, '/v1/ai', 'POST').size).toBeGreaterThanOrEqual(2);

      // The token still guards the summed answer.
      const refused = await fetch(`${server.url}/metrics`, { headers: { connection: 'close' } });
      expect(refused.status).toBe(401);
    },
  );

  it('sums the last figures of a process that does not answer within 2 s, says so, and keeps the counts of a process that died', async () => {
    const box = newBox('airs-metrics-late');
    box.writeConfig({ metrics: { token } });
    const server = await startServer(box, {
      args: ['--processes', '2'],
      env: { LOG_LEVEL: 'debug' },
      timeoutMs: 60_000,
    });
    started.push(server);
    const { key } = await createAccountWithKey(box, 'late@example.com', 'scale');
    // Submits on connections of their own: the two processes take them in turn.
    const submits = 6;
    for (let i = 0; i < submits; i++) {
      const submitted = await call(server.url, key, 'POST', '/v1/ai', { model: 'echo', prompt: `late ${i}` });
      expect(submitted.status).toBe(202);
    }
    const submitsSeen = 'airs_http_requests_total{method="POST",route="/v1/ai",status="202"}';
    const first = await scrape(server.url);
    expect(sample(first, 'airs_metrics_processes{state="answered"}')).toBe(2);
    expect(sample(first, submitsSeen)).toBe(submits);
    for (let i = 0; i < 50 && servingPids(server, '/v1/ai', 'POST').size < 2; i++) await sleep(100);
    const [hung] = [...servingPids(server, '/v1/ai', 'POST')] as [number];
    expect(servingPids(server, '/v1/ai', 'POST').size).toBe(2);

    process.kill(hung, 'SIGSTOP');
    let text: string | undefined;
    try {
      text = await scrapeAnswering(server.url, () => true);
    } finally {
      // Killed while stopped: the primary starts another in its place.
      process.kill(hung, 'SIGKILL');
    }
    expect(sample(text, 'airs_metrics_processes{state="answered"}')).toBe(1);
    expect(sample(text, 'airs_metrics_processes{state="late"}')).toBe(1);
    expect(sample(text, 'airs_metrics_processes{state="missing"}')).toBe(0);
    expect(text).toMatch(/^# airs: 1 of 2 server processes did not answer within 2000 ms: their last figures/m);
    // The stopped process's submits are still counted (its last figures): the counter does not go back.
    expect(sample(text, submitsSeen)).toBe(submits);

    const after = await scrapeAnswering(
      server.url,
      (body) => sample(body, 'airs_metrics_processes{state="answered"}') === 2,
    );
    expect(sample(after, 'airs_metrics_processes{state="late"}')).toBe(0);
    // The dead process's counts stay in the sums.
    expect(sample(after, submitsSeen)).toBe(submits);
    expect(sample(after, 'airs_http_request_duration_seconds_count{method="POST",route="/v1/ai"}')).toBe(submits);
  });
});
