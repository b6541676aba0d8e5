import { afterEach, describe, expect, it } from 'vitest';
import { type ClientOptions, createClient, type SleepFn } from '../../src/client/index.js';
import { completed, queued, type ScriptedAnswer, scriptedServer } from './support.js';

/**
 * The client's long polls (`Prefer: wait=N`) against a scripted HTTP server on 127.0.0.1: what it asks, how it
 * follows a poll the server held, and how it falls back to the specification's loop with a server that ignores them.
 * Time moves only when the client sleeps, or by `heldMs` during each call (as a server holding it would take).
 */

const servers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

const scripted = async (
  answers: readonly ScriptedAnswer[],
  options: Partial<ClientOptions> & { heldMs?: number } = {},
) => {
  const server = await scriptedServer(answers);
  servers.push(server);
  const delays: number[] = [];
  let now = Date.UTC(2026, 0, 1);
  const sleep: SleepFn = async (ms) => {
    delays.push(ms);
    now += ms;
  };
  const { heldMs = 0, ...clientOptions } = options;
  const client = createClient({
    baseUrl: server.url,
    apiKey: 'sk_test',
    sleep,
    now: () => now,
    fetch: async (input, init) => {
      const answer = await fetch(input, init);
      now += heldMs;
      return answer;
    },
    ...clientOptions,
  });
  return { client, delays, seen: server.seen };
};

const held = (seconds: number) => queued('req_a', { 'retry-after': '5', 'preference-applied': `wait=${seconds}` });
const submitted: ScriptedAnswer = { status: 202, body: { request_id: 'req_a', model: 'echo' } };

describe('the client’s long polls', { timeout: 20_000 }, () => {
  it('asks each poll to be held (Prefer: wait=30 by default) and polls again at once after a held queued answer', async () => {
    const { client, delays, seen } = await scripted([held(30), held(30), completed('req_a', 'late')], {
      heldMs: 30_000,
    });

    const body = await client.wait('req_a');

    expect(body.response).toBe('late');
    expect(seen.map((call) => call.prefer)).toEqual(['wait=30', 'wait=30', 'wait=30']);
    // Neither the queued answers' Retry-After nor the 5 s interval: the server already made the client wait.
    expect(delays).toEqual([]);
  });

  it('sends at most one poll a second, even when a server says it held polls that it answered at once', async () => {
    const { client, delays } = await scripted([held(30), held(30), completed('req_a')]);

    await client.wait('req_a');

    expect(delays).toEqual([1_000, 1_000]);
  });

  it('honours Retry-After, as the specification says, with a server that does not hold polls', async () => {
    const { client, delays, seen } = await scripted([queued('req_a', { 'retry-after': '5' }), completed('req_a')]);

    await client.wait('req_a');

    expect(seen[0]?.prefer).toBe('wait=30');
    expect(delays).toEqual([5_000]);
  });

  it('in run, polls at once after the 202 and, with a server that does not hold polls, pauses firstPollDelayMs after the first queued answer', async () => {
    const { client, delays, seen } = await scripted([
      submitted,
      queued('req_a', { 'retry-after': '5' }),
      queued('req_a', { 'retry-after': '5' }),
      completed('req_a', 'ok'),
    ]);

    const body = await client.run('echo', 'hi');

    expect(body.response).toBe('ok');
    expect(seen.map((call) => call.method)).toEqual(['POST', 'GET', 'GET', 'GET']);
    expect(delays).toEqual([200, 5_000]);
  });

  it('never asks to be held past its timeout, and asks nothing with pollWaitSeconds: 0 (then run pauses before its first poll)', async () => {
    const bounded = await scripted([completed('req_a')]);
    await bounded.client.wait('req_a', { timeoutMs: 2_500 });
    expect(bounded.seen[0]?.prefer).toBe('wait=2');

    const plain = await scripted([submitted, completed('req_a')], { pollWaitSeconds: 0 });
    await plain.client.run('echo', 'hi');
    expect(plain.seen.map((call) => call.prefer)).toEqual([undefined, undefined]);
    expect(plain.delays).toEqual([200]);

    const asked = await scripted([completed('req_a')], { pollWaitSeconds: 45 });
    await asked.client.wait('req_a');
    expect(asked.seen[0]?.prefer).toBe('wait=45');
  });
});
