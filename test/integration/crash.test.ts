import { afterEach, describe, expect, it } from 'vitest';
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

/** How many requests the burst sends at once. */
const burst = 150;

type ReplayJson = {
  events: Array<{ type: string; reqId?: string; seq: number }>;
  final_states: Record<string, string>;
};

describe('a server killed with SIGKILL right after a burst of submits', { timeout: 60_000 }, () => {
  let box: Sandbox | undefined;
  afterEach(async () => {
    await killChildren();
    box?.remove();
    box = undefined;
  });

  it('loses no acknowledged request: after a restart every one completes with its prompt, exactly once', async () => {
    box = sandbox('airs-crash');
    // A slow model and two workers: when the last 202 arrives, most of the burst is still queued.
    box.writeConfig({
      models: [{ id: 'slow', provider: 'echo', delayMs: 400 }],
      processing: { concurrency: 2 },
    });
    const { key } = await createAccountWithKey(box, 'crash@example.com', 'enterprise');
    const first = await startServer(box);

    const prompts = Array.from({ length: burst }, (_, i) => `crash prompt ${i} ${Math.random().toString(36)}`);
    const answers = await Promise.all(prompts.map((prompt) => submit(first.url, key, 'slow', prompt)));
    first.child.kill('SIGKILL');
    const code = await first.stop('SIGKILL');
    expect(code).not.toBe(0);

    expect(answers.map((a) => a.status)).toEqual(prompts.map(() => 202));
    const acknowledged = new Map<string, string>();
    answers.forEach((answer, i) => {
      expect(answer.body.model).toBe('slow');
      acknowledged.set(String(answer.body.request_id), prompts[i] ?? '');
    });
    expect(acknowledged.size).toBe(burst);

    // The crash really interrupted work: the log holds every acknowledged request, and some are not done.
    const atCrash = await cliJson<ReplayJson>(box, ['replay']);
    for (const reqId of acknowledged.keys()) expect(atCrash.final_states[reqId]).toBeDefined();
    const unfinished = [...acknowledged.keys()].filter((reqId) => atCrash.final_states[reqId] !== 'completed');
    expect(unfinished.length).toBeGreaterThan(0);

    // Same data directory, same model id; a shorter delay keeps the test's running time bounded.
    box.writeConfig({
      models: [{ id: 'slow', provider: 'echo', delayMs: 5 }],
      processing: { concurrency: 8 },
    });
    const second = await startServer(box);

    const pending = new Set(acknowledged.keys());
    const deadline = Date.now() + 40_000;
    while (pending.size > 0 && Date.now() < deadline) {
      const polled = await Promise.all(
        [...pending].map(async (reqId) => [reqId, await poll(second.url, key, reqId)] as const),
      );
      for (const [reqId, answer] of polled) {
        expect(answer.status, `GET ${reqId}: ${JSON.stringify(answer.body)}`).toBe(200);
        expect(answer.body.req_id).toBe(reqId);
        if (answer.body.status === 'completed') {
          expect(answer.body.response).toBe(acknowledged.get(reqId));
          expect(answer.body.model).toBe('slow');
          pending.delete(reqId);
        } else {
          expect(answer.body.status).toBe('queued');
        }
      }
      if (pending.size > 0) await sleep(100);
    }
    expect([...pending], 'requests still not completed after the restart').toEqual([]);
    expect(await second.stop('SIGTERM')).toBe(0);

    const log = await cliJson<ReplayJson>(box, ['replay']);
    const completions = new Map<string, number>();
    for (const event of log.events) {
      if (event.type === 'RequestCompleted' && event.reqId !== undefined) {
        completions.set(event.reqId, (completions.get(event.reqId) ?? 0) + 1);
      }
    }
    for (const reqId of acknowledged.keys()) {
      expect(completions.get(reqId), `RequestCompleted events of ${reqId}`).toBe(1);
      expect(log.final_states[reqId]).toBe('completed');
    }
    expect([...completions.values()].filter((count) => count > 1)).toEqual([]);

    const verified = await runCli(box, ['replay', '--verify']);
    expect(verified.stderr).toBe('');
    expect(verified.code).toBe(0);
    expect(verified.stdout).toMatch(/every view matches the log/);
  });
});
