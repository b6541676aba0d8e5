import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';
import {
  createAccountWithKey,
  fileSandboxes,
  poll,
  runCli,
  type ServerProcess,
  sleep,
  startServer,
  submit,
} from '../support/processes.js';

/*
 * Contract 19, "Seen from outside": a model's upstreams as an operator sees them, through `airs serve` processes, the
 * CLI and `/metrics`, with real fake upstreams on 127.0.0.1 that hold or answer the calls.
 */

const newBox = fileSandboxes();

type Listed = {
  models: {
    id: string;
    provider: string;
    upstreams: {
      name: string;
      baseUrl: string;
      maxConcurrency: number | null;
      inFlight: number;
      state: string;
      until?: string;
      lastError?: string;
    }[];
  }[];
};

/** The samples of one metric, as `labels text → value`. */
const samples = (text: string, name: string): Map<string, number> =>
  new Map(
    text
      .split('\n')
      .filter((line) => line.startsWith(`${name}{`))
      .map((line) => {
        const cut = line.lastIndexOf(' ');
        return [line.slice(name.length, cut), Number(line.slice(cut + 1))] as const;
      }),
  );

const scrape = async (server: ServerProcess) => (await fetch(`${server.url}/metrics`)).text();

const until = async (what: string, done: () => boolean | Promise<boolean>, timeoutMs = 15_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
};

describe("A model's upstreams seen from outside", { timeout: 90_000 }, () => {
  let a: Awaited<ReturnType<typeof startFakeOpenAi>>;
  let b: Awaited<ReturnType<typeof startFakeOpenAi>>;
  let c: Awaited<ReturnType<typeof startFakeOpenAi>>;
  beforeAll(async () => {
    c = await startFakeOpenAi();
    // Each call waits 150 ms before its answer: a time to first token that can be told from nothing.
    a = await startFakeOpenAi({ delayMs: 150 });
    b = await startFakeOpenAi({ delayMs: 150 });
  });
  afterAll(async () => {
    await a.close();
    await b.close();
    await c.close();
  });
  const config = () => ({
    models: [
      { id: 'echo', provider: 'echo' },
      {
        id: 'fleet',
        provider: 'openai',
        upstreamModel: 'llama-3-8b',
        upstreams: [
          { name: 'a', baseUrl: a.baseUrl, maxConcurrency: 3 },
          { name: 'b', baseUrl: b.baseUrl, maxConcurrency: 2 },
        ],
      },
      // One upstream: its calls are not placed, and count in the model's own counter.
      { id: 'solo', provider: 'openai', upstreamModel: 'llama-3-8b', baseUrl: c.baseUrl, maxConcurrency: 4 },
    ],
  });

  it('airs models list shows each upstream with its places and the calls in flight on it counted across two airs serve processes, and /metrics shows the same', async () => {
    const box = newBox('airs-upstreams-list');
    box.writeConfig(config());
    const first = await startServer(box);
    const second = await startServer(box);
    const { key } = await createAccountWithKey(box, 'fleet@example.com', 'scale');
    // Calls the upstreams hold unanswered: 2 sent through one process, 3 through the other, all five places taken.
    const sent = await Promise.all([
      ...[1, 2].map(() => submit(first.url, key, 'fleet', 'hang')),
      ...[1, 2, 3].map(() => submit(second.url, key, 'fleet', 'hang')),
      submit(second.url, key, 'solo', 'hang'),
    ]);
    for (const answer of sent) expect(answer.status).toBe(202);
    await until('six calls held by the upstreams', () => a.calls('hang') + b.calls('hang') + c.calls('hang') === 6);

    const listed = await runCli(box, ['models', 'list', '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    const document = JSON.parse(listed.stdout) as Listed;
    expect(document.models.map((model) => model.id)).toEqual(['echo', 'fleet', 'solo']);
    expect(document.models[0]?.upstreams).toEqual([]);
    // What the store counts is what the upstreams themselves hold.
    expect(document.models[1]?.upstreams).toEqual([
      { name: 'a', baseUrl: a.baseUrl, maxConcurrency: 3, inFlight: a.calls('hang'), state: 'in_service' },
      { name: 'b', baseUrl: b.baseUrl, maxConcurrency: 2, inFlight: b.calls('hang'), state: 'in_service' },
    ]);
    expect(document.models[2]?.upstreams).toEqual([
      { name: '0', baseUrl: c.baseUrl, maxConcurrency: 4, inFlight: 1, state: 'in_service' },
    ]);
    expect(a.calls('hang')).toBe(3);
    expect(b.calls('hang')).toBe(2);

    const text = await runCli(box, ['models', 'list']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout.trimEnd().split('\n')).toEqual([
      'echo: echo, built in: no upstream',
      `fleet a ${a.baseUrl} in_flight=3/3 in_service`,
      `fleet b ${b.baseUrl} in_flight=2/2 in_service`,
      `solo 0 ${c.baseUrl} in_flight=1/4 in_service`,
    ]);

    // Either process's /metrics reads the same store: the calls in flight in all processes.
    for (const server of [first, second]) {
      const metrics = await scrape(server);
      expect(samples(metrics, 'airs_upstream_in_flight')).toEqual(
        new Map([
          ['{model="fleet",upstream="a"}', 3],
          ['{model="fleet",upstream="b"}', 2],
          ['{model="solo",upstream="0"}', 1],
        ]),
      );
      expect(samples(metrics, 'airs_upstream_in_service')).toEqual(
        new Map([
          ['{model="fleet",upstream="a"}', 1],
          ['{model="fleet",upstream="b"}', 1],
          ['{model="solo",upstream="0"}', 1],
        ]),
      );
    }
    await Promise.all([first.stop(), second.stop()]);
  });

  it('a completed call is counted on its upstream in /metrics, and airs replay --request names the upstream that served it and its time to first token', async () => {
    const box = newBox('airs-upstreams-replay');
    box.writeConfig(config());
    const server = await startServer(box);
    const { key } = await createAccountWithKey(box, 'replay@example.com', 'scale');
    const before = { a: a.calls('hello fleet'), b: b.calls('hello fleet') };
    const created = await submit(server.url, key, 'fleet', 'hello fleet');
    expect(created.status).toBe(202);
    const reqId = created.body.request_id as string;
    await until('the answer', async () => (await poll(server.url, key, reqId)).body.status === 'completed');
    const servedBy = a.calls('hello fleet') > before.a ? 'a' : 'b';
    expect(a.calls('hello fleet') - before.a + b.calls('hello fleet') - before.b).toBe(1);

    const calls = samples(await scrape(server), 'airs_upstream_calls_total');
    expect(calls).toEqual(new Map([[`{model="fleet",upstream="${servedBy}",outcome="ok"}`, 1]]));

    const replayed = await runCli(box, ['replay', '--request', reqId, '--json']);
    expect(replayed.code, replayed.stderr).toBe(0);
    const events = (
      JSON.parse(replayed.stdout) as {
        events: { type: string; upstream?: string; firstTokenMs?: number; served?: Record<string, unknown> }[];
      }
    ).events;
    expect(events.find((event) => event.type === 'RequestProcessingStarted')?.upstream).toBe(servedBy);
    const completed = events.find((event) => event.type === 'RequestCompleted');
    // The upstream waits 150 ms before its first byte; the whole call took less than the test's wait for it.
    expect(completed?.firstTokenMs).toBeGreaterThanOrEqual(140);
    expect(completed?.firstTokenMs).toBeLessThan(10_000);
    expect(completed?.served).toEqual({ model: 'fleet', upstream: servedBy, firstTokenMs: completed?.firstTokenMs });

    const lines = await runCli(box, ['replay', '--request', reqId]);
    expect(lines.code, lines.stderr).toBe(0);
    expect(lines.stdout).toContain(`(upstream ${servedBy} of fleet, first token after ${completed?.firstTokenMs} ms)`);
    await server.stop();
  });
});
