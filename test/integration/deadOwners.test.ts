import { afterEach, describe, expect, it } from 'vitest';
import { chatLines, createBatch, pollBatch, startBatchServer, uploadLines } from '../support/batchServer.js';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';
import {
  cliJson,
  createAccountWithKey,
  fileSandboxes,
  killChildren,
  poll,
  type Sandbox,
  sandbox,
  sleep,
  startServer,
} from '../support/processes.js';

/**
 * Contract 17, last point: on one machine (LMDB, one data directory) a server that starts, or a server process that
 * sees a sibling die, takes up at once the leases of processes that no longer exist, instead of waiting out the lease
 * (30 s here). Through the real CLI: model calls in flight, `kill -9`, then a restart (or the primary of
 * `--processes 2` replacing the killed process), and the same requests' model calls start again. "At once" is an
 * order, read from the log: each request's next attempt started before the lease of the dead one would have lapsed.
 */

type Logged = { type: string; reqId?: string; owner?: string; attempt?: number; at?: string; leaseUntil?: number };

/** When an event was logged, in ms since the epoch (`airs replay --json` writes it as an ISO date). */
const atOf = (event: Logged | undefined) => Date.parse(event?.at ?? '');

/**
 * Each of `reqIds` had its model called again (attempt 2) before the lease of attempt 1 would have lapsed: the end
 * its start or last extension gave it. Waiting out the lease would start it at that end or after.
 */
const expectTakenUpBeforeLeaseEnd = (events: readonly Logged[], reqIds: readonly string[]) => {
  for (const reqId of reqIds) {
    const mine = events.filter((event) => event.reqId === reqId);
    const leaseEnd = Math.max(
      ...mine
        .filter((event) => event.attempt === 1 && event.leaseUntil !== undefined)
        .map((event) => event.leaseUntil as number),
    );
    const next = mine.find((event) => event.type === 'RequestProcessingStarted' && event.attempt === 2);
    expect(atOf(next), `${reqId}: attempt 2 started before attempt 1's lease end`).toBeLessThan(leaseEnd);
  }
};

const leaseSeconds = 30;
/** The model answers after this long: every first call is still in flight when its server is killed. */
const modelMs = 4_000;

/** Submits on a connection of its own, so that `--processes N` hands each to the next process. */
const submitAlone = async (url: string, key: string, prompt: string) => {
  const response = await fetch(`${url}/v1/ai`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', connection: 'close' },
    body: JSON.stringify({ model: 'llm', prompt }),
  });
  const body = (await response.json()) as { request_id?: string };
  expect(response.status, JSON.stringify(body)).toBe(202);
  return String(body.request_id);
};

/** Waits until `done()` holds; returns when it first did (ms since the epoch). */
const until = async (done: () => boolean, timeoutMs: number, what: string) => {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await sleep(10);
  }
  return Date.now();
};

/** The pid an owner name tells (`proc_<random>~<pid>.<start>.<boot>.<namespace>`). */
const pidOf = (owner: string | undefined) => Number(/~(\d+)\./.exec(owner ?? '')?.[1] ?? Number.NaN);

const newBox = fileSandboxes();

describe('dead owners on one machine (contract 17)', { timeout: 90_000 }, () => {
  const cleanups: Array<() => unknown> = [];
  let box: Sandbox | undefined;
  afterEach(async () => {
    await killChildren();
    for (const cleanup of cleanups.splice(0)) await cleanup();
    box?.remove();
    box = undefined;
  });

  const setUp = async () => {
    const upstream = await startFakeOpenAi({ delayMs: modelMs });
    cleanups.push(() => upstream.close());
    box = sandbox('airs-deadowners');
    box.writeConfig({
      models: [{ id: 'llm', provider: 'openai', baseUrl: upstream.baseUrl, upstreamModel: 'tiny', maxRetries: 0 }],
      // Workers enough that the sibling of a killed process has room for its work at once (a full sibling leaves it
      // to the replacement, which takes it up when it starts, a second or so later).
      processing: { concurrency: 8, leaseSeconds },
    });
    const { key } = await createAccountWithKey(box, 'dead@example.com', 'enterprise');
    return { upstream, box, key };
  };

  it('a server restarted after kill -9 starts its predecessor’s model calls again at once, not after the lease', async () => {
    const { upstream, box, key } = await setUp();
    const first = await startServer(box);
    const prompts = ['dead 1', 'dead 2', 'dead 3'];
    const reqIds = await Promise.all(prompts.map((prompt) => submitAlone(first.url, key, prompt)));
    await until(() => prompts.every((p) => upstream.calls(p) === 1), 10_000, 'every first model call started');
    first.child.kill('SIGKILL');
    expect(await first.stop('SIGKILL')).not.toBe(0);

    const startedAt = Date.now();
    const second = await startServer(box);
    const readyAt = Date.now();
    const resumedAt = await until(
      () => prompts.every((p) => upstream.calls(p) === 2),
      leaseSeconds * 1_000,
      'every model call started again',
    );
    console.log(
      `restart: ready ${readyAt - startedAt} ms after spawn; in-flight work resumed ${resumedAt - readyAt} ms after ready`,
    );

    for (const reqId of reqIds) {
      let status = '';
      const deadline = Date.now() + 15_000;
      while (status !== 'completed' && Date.now() < deadline) {
        status = String((await poll(second.url, key, reqId)).body.status);
        if (status !== 'completed') await sleep(100);
      }
      expect(status, reqId).toBe('completed');
    }
    expect(await second.stop('SIGTERM')).toBe(0);

    // The log says why: the dead process's attempt ended (RequestOwnerGone), and the next one started at once.
    const { events } = await cliJson<{ events: Logged[] }>(box, ['replay']);
    expectTakenUpBeforeLeaseEnd(events, reqIds);
    for (const reqId of reqIds) {
      const mine = events.filter((event) => event.reqId === reqId).map((event) => [event.type, event.attempt]);
      expect(mine).toEqual([
        ['RequestQueued', undefined],
        ['RequestProcessingStarted', 1],
        ['RequestOwnerGone', 1],
        ['RequestProcessingStarted', 2],
        ['RequestCompleted', 2],
      ]);
    }
  });

  it('with --processes 2, a killed server process’s model calls start again at once in its sibling; the sibling keeps its own', async () => {
    const { upstream, box, key } = await setUp();
    const server = await startServer(box, { args: ['--processes', '2'], timeoutMs: 40_000 });
    const prompts = Array.from({ length: 6 }, (_, i) => `sibling ${i}`);
    const reqIds: string[] = [];
    for (const prompt of prompts) reqIds.push(await submitAlone(server.url, key, prompt));
    await until(() => prompts.every((p) => upstream.calls(p) === 1), 10_000, 'every first model call started');

    // Who holds what, from the log: each owner name tells its process.
    const { events } = await cliJson<{ events: Logged[] }>(box, ['replay']);
    const holder = new Map<string, number>();
    for (const event of events)
      if (event.type === 'RequestProcessingStarted' && event.reqId !== undefined)
        holder.set(event.reqId, pidOf(event.owner));
    const pids = new Set(holder.values());
    expect(pids.size, 'both processes hold work').toBe(2);
    const victim = holder.get(reqIds[0] as string) as number;
    const victims = prompts.filter((_, i) => holder.get(reqIds[i] as string) === victim);
    const survivors = prompts.filter((p) => !victims.includes(p));

    process.kill(victim, 'SIGKILL');
    const killedAt = Date.now();
    const resumedAt = await until(
      () => victims.every((p) => upstream.calls(p) === 2),
      leaseSeconds * 1_000,
      "the killed process's model calls started again",
    );
    console.log(
      `--processes 2: ${victims.length} requests of the killed process resumed ${resumedAt - killedAt} ms after the kill`,
    );
    // The live process's leases were never taken: its calls were not started again.
    for (const prompt of survivors) expect(upstream.calls(prompt), prompt).toBe(1);

    for (const reqId of reqIds) {
      let status = '';
      const deadline = Date.now() + 15_000;
      while (status !== 'completed' && Date.now() < deadline) {
        status = String((await poll(server.url, key, reqId)).body.status);
        if (status !== 'completed') await sleep(100);
      }
      expect(status, reqId).toBe('completed');
    }
    for (const prompt of survivors) expect(upstream.calls(prompt), prompt).toBe(1);
    expect(await server.stop('SIGTERM')).toBe(0);

    const after = await cliJson<{ events: Logged[] }>(box, ['replay']);
    const ended = after.events.filter((event) => event.type === 'RequestOwnerGone');
    expect(new Set(ended.map((event) => pidOf(event.owner)))).toEqual(new Set([victim]));
    expect(ended.length).toBe(victims.length);
    expectTakenUpBeforeLeaseEnd(
      after.events,
      reqIds.filter((_, i) => victims.includes(prompts[i] as string)),
    );
  });
  it('a batch whose server was killed mid-run ends as soon as its lines do after the restart, not after its lease', async () => {
    const upstream = await startFakeOpenAi({ delayMs: modelMs });
    cleanups.push(() => upstream.close());
    const served = await startBatchServer(newBox, 'batch-deadowners', {
      models: [{ id: 'llm', provider: 'openai', baseUrl: upstream.baseUrl, upstreamModel: 'tiny', maxRetries: 0 }],
      processing: { concurrency: 8, leaseSeconds },
    });
    const lines = chatLines(4, 'llm', 'batch');
    const prompts = lines.map((line) => line.body.messages[0]?.content ?? '');
    const file = await uploadLines(served, 'lines', lines);
    const batchId = (await createBatch(served.client, file.id)).id;
    // Every line queued and its model call started: the batch's lease and the lines' leases are the server's.
    await pollBatch(served.client, batchId, (batch) => batch.status === 'in_progress', { everyMs: 20 });
    await until(() => prompts.every((p) => upstream.calls(p) === 1), 10_000, 'every line called');
    await served.stop('SIGKILL');

    await served.restart();
    const readyAt = Date.now();
    const resumedAt = await until(
      () => prompts.every((p) => upstream.calls(p) === 2),
      leaseSeconds * 1_000,
      'every line called again',
    );
    // Finalizing needs the batch's lease: taken up at the start too, so the batch ends once its lines have.
    const ended = await pollBatch(served.client, batchId, () => false, {
      everyMs: 50,
      timeoutMs: leaseSeconds * 1_000,
    });
    const endedAt = Date.now();
    console.log(
      `batch: lines resumed ${resumedAt - readyAt} ms after ready; batch ${ended.status} ${endedAt - readyAt} ms after ready`,
    );
    expect(ended.status).toBe('completed');
    expect(ended.request_counts).toEqual({ total: 4, completed: 4, failed: 0 });
    await served.stop();
    const { events } = await cliJson<{ events: (Logged & { batchId?: string })[] }>(served.box, ['replay']);
    const gone = events.filter((event) => event.type === 'BatchOwnerGone' && event.batchId === batchId);
    expect(gone).toHaveLength(1);
    // The lines and the batch were taken up before the killed server's leases would have lapsed: its lines' next
    // attempts started, and the batch ended, before then.
    const lineIds = [
      ...new Set(
        events.flatMap((event) =>
          event.type === 'RequestProcessingStarted' && event.attempt === 2 ? [event.reqId as string] : [],
        ),
      ),
    ];
    expect(lineIds).toHaveLength(lines.length);
    expectTakenUpBeforeLeaseEnd(events, lineIds);
    const deadBatchLeaseEnd = Math.max(
      ...events
        .filter((event) => event.type === 'BatchTaken' && event.batchId === batchId && event.owner === gone[0]?.owner)
        .map((event) => event.leaseUntil as number),
    );
    const batchEnded = events.find((event) => event.type === 'BatchEnded' && event.batchId === batchId);
    expect(atOf(batchEnded)).toBeLessThan(deadBatchLeaseEnd);
  });
});
