import { afterEach, describe, expect, it } from 'vitest';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';
import {
  cliJson,
  createAccountWithKey,
  killChildren,
  poll,
  runCli,
  type Sandbox,
  sandbox,
  sleep,
  startServer,
  submit,
} from '../support/processes.js';

/** Kill/restart cycles on one data directory; the last one kills right after a whole burst was acknowledged. */
const cycles = 8;
/** Clients submitting at once while the server runs. */
const senders = 4;

type ReplayJson = {
  events: Array<{ type: string; reqId?: string; seq: number }>;
  final_states: Record<string, string>;
};

/** A small seeded generator, so a failing run can be told apart (the seed is in every failure message). */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

const countBy = (events: ReplayJson['events'], type: string) => {
  const counts = new Map<string, number>();
  for (const event of events) {
    if (event.type === type && event.reqId !== undefined) counts.set(event.reqId, (counts.get(event.reqId) ?? 0) + 1);
  }
  return counts;
};

describe('a server killed with SIGKILL at random moments while it takes submits and calls its model', () => {
  const cleanups: Array<() => unknown> = [];
  let box: Sandbox | undefined;
  afterEach(async () => {
    await killChildren();
    for (const cleanup of cleanups.splice(0)) await cleanup();
    box?.remove();
    box = undefined;
  });

  it('completes every acknowledged request exactly once with the model answer, calling the model at most once per recorded attempt', async () => {
    const seed = Date.now() % 1_000_000;
    const next = random(seed);
    const about = `seed ${seed}`;
    // Slower than the submits arrive, so the queue grows and every kill finds model calls in flight.
    const upstream = await startFakeOpenAi({ delayMs: () => 30 + Math.floor(next() * 90), numbered: true });
    cleanups.push(() => upstream.close());
    box = sandbox('airs-crash');
    box.writeConfig({
      // maxRetries 0: each attempt is one upstream call, so calls can be held against recorded attempts.
      models: [{ id: 'llm', provider: 'openai', baseUrl: upstream.baseUrl, upstreamModel: 'tiny', maxRetries: 0 }],
      // Attempts cut by kills count; enough of them that no request gives up.
      processing: { concurrency: 4, maxAttempts: 50 },
    });
    const { key } = await createAccountWithKey(box, 'crash@example.com', 'enterprise');

    const acknowledged = new Map<string, string>();
    const sent = new Set<string>();
    const send = async (url: string, prompt: string) => {
      sent.add(prompt);
      const answer = await submit(url, key, 'llm', prompt).catch(() => undefined); // reset by the kill
      if (answer === undefined) return;
      expect(answer.status, `${about}: POST ${prompt}: ${JSON.stringify(answer.body)}`).toBe(202);
      acknowledged.set(String(answer.body.request_id), prompt);
    };

    for (let cycle = 0; cycle < cycles; cycle++) {
      const server = await startServer(box);
      if (cycle < cycles - 1) {
        let killed = false;
        let count = 0;
        const stream = async () => {
          while (!killed) {
            await send(server.url, `crash ${cycle}.${count++} ${seed}`);
            await sleep(next() * 40);
          }
        };
        const streams = Array.from({ length: senders }, stream);
        await sleep(100 + next() * 600);
        killed = true;
        server.child.kill('SIGKILL');
        await Promise.all(streams);
      } else {
        const burst = Array.from({ length: 60 }, (_, i) => `crash ${cycle}.${i} ${seed}`);
        await Promise.all(burst.map((prompt) => send(server.url, prompt)));
        server.child.kill('SIGKILL');
      }
      expect(await server.stop('SIGKILL'), about).not.toBe(0);
      // Right after the kill, the log already holds every request acknowledged so far.
      const atCrash = await cliJson<ReplayJson>(box, ['replay']);
      const missing = [...acknowledged.keys()].filter((reqId) => atCrash.final_states[reqId] === undefined);
      expect(missing, `${about}: acknowledged but not in the log after kill ${cycle + 1}`).toEqual([]);
    }
    expect(acknowledged.size, about).toBeGreaterThan(60);

    // Every request in the log, acknowledged or not, must now complete.
    const logged = Object.keys((await cliJson<ReplayJson>(box, ['replay'])).final_states);
    const server = await startServer(box);
    const responses = new Map<string, string>();
    const deadline = Date.now() + 30_000;
    while (responses.size < logged.length && Date.now() < deadline) {
      const pending = logged.filter((reqId) => !responses.has(reqId));
      const polled = await Promise.all(
        pending.map(async (reqId) => [reqId, await poll(server.url, key, reqId)] as const),
      );
      for (const [reqId, answer] of polled) {
        expect(answer.status, `${about}: GET ${reqId}: ${JSON.stringify(answer.body)}`).toBe(200);
        if (answer.body.status === 'completed') responses.set(reqId, String(answer.body.response));
      }
      if (responses.size < logged.length) await sleep(200);
    }
    expect(
      logged.filter((reqId) => !responses.has(reqId)),
      `${about}: not completed after the restart`,
    ).toEqual([]);
    expect(await server.stop('SIGTERM')).toBe(0);

    const log = await cliJson<ReplayJson>(box, ['replay']);
    const completions = countBy(log.events, 'RequestCompleted');
    const attempts = countBy(log.events, 'RequestProcessingStarted');
    const promptOf = new Map(acknowledged);
    for (const [reqId, response] of responses) {
      expect(log.final_states[reqId], `${about}: ${reqId}`).toBe('completed');
      expect(completions.get(reqId), `${about}: RequestCompleted events of ${reqId}`).toBe(1);
      // An unacknowledged request is known by the answer it got: `upstream says: <prompt> #<call>`.
      const prompt = promptOf.get(reqId) ?? /^upstream says: (.*) #\d+$/.exec(response)?.[1] ?? '';
      expect(sent.has(prompt), `${about}: ${reqId} answered "${response}", no prompt of this test`).toBe(true);
      promptOf.set(reqId, prompt);
      expect(upstream.answers(prompt), `${about}: ${reqId} completed with what the model never answered`).toContain(
        response,
      );
      expect(upstream.calls(prompt), `${about}: model calls for ${reqId}`).toBeLessThanOrEqual(
        attempts.get(reqId) ?? 0,
      );
    }
    for (const reqId of acknowledged.keys()) expect(responses.has(reqId), `${about}: ${reqId}`).toBe(true);
    // One request per prompt, and no model call for a prompt whose request never reached the log.
    const requestPrompts = [...promptOf.values()];
    expect(new Set(requestPrompts).size, about).toBe(requestPrompts.length);
    expect(
      upstream.prompts().filter((prompt) => !requestPrompts.includes(prompt)),
      about,
    ).toEqual([]);
    // The kills really cut model calls short: more attempts were recorded than requests completed.
    expect(
      [...attempts.values()].reduce((a, b) => a + b, 0),
      about,
    ).toBeGreaterThan(responses.size);

    const verified = await runCli(box, ['replay', '--verify']);
    expect(verified.stderr, about).toBe('');
    expect(verified.code, about).toBe(0);
    expect(verified.stdout).toMatch(/every view matches the log/);
  }, 90_000);
});
