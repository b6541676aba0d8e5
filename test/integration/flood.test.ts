import autocannon from 'autocannon';
import { describe, expect, it } from 'vitest';
import { createAccountWithKey, fileSandboxes, sleep, startServer } from '../support/processes.js';

/**
 * Issue 28's flood, scaled to a few seconds on a real `airs serve` (127.0.0.1, `echo`): 64 connections submit as fast
 * as the server answers for 4 s, ignoring `Retry-After` (autocannon). Counted from the server's own metrics, in one
 * scrape when the flood ends: requests completed while it lasted against submits accepted (`202`). The rule
 * (docs/decisions.md, "Completions keep up with submits"): the workers' commands go into each write ahead of the
 * API's, and a process whose backlog of queued submits reaches `processing.maxBacklog` (here 20) answers `503` with
 * `Retry-After` until its workers take some.
 *
 * The factor asserted: completed ≥ 0.7 × accepted during the flood. What is accepted and not completed when it ends
 * is at most the backlog (20) and the requests in flight (16 workers). Measured on the 2-core dev machine, loaded by
 * other jobs: 0.75–0.85 with the rule; 0.46 with admission turned off (and 0.1–0.2 for `main` under the 256-connection
 * flood of the issue), the queue then taking seconds to drain. Counts, not times: a slower machine accepts less and
 * completes less, in proportion.
 */

const newBox = fileSandboxes();

const floodSeconds = 4;
const connections = 64;
const maxBacklog = 20;
const factor = 0.7;

/** Submits accepted (`202` to `POST /v1/ai`) and requests completed so far, both from one scrape of `/metrics`. */
const countsOf = async (url: string) => {
  const text = await (await fetch(`${url}/metrics`)).text();
  let accepted = 0;
  let completed = 0;
  for (const line of text.split('\n')) {
    const value = Number(line.split(' ').at(-1));
    if (line.startsWith('airs_processing_outcomes_total') && line.includes('outcome="completed"')) completed += value;
    if (line.startsWith('airs_http_requests_total{') && /route="\/v1\/ai".*status="202"/.test(line)) accepted += value;
  }
  return { accepted, completed };
};

describe('A flood of submits (a real airs serve)', { timeout: 120_000 }, () => {
  it(`completes at least ${factor} × what it accepts while the flood lasts, refuses only with 503, and drains after`, async () => {
    const box = newBox('airs-flood');
    box.writeConfig({
      // The 16 workers the factor was measured with (the default now follows the models: 32 for the built-in two).
      processing: { maxBacklog, concurrency: 16 },
      plans: { enterprise: { submitsPerMinute: 100_000_000, maxQueued: 100_000_000 } },
    });
    const { key } = await createAccountWithKey(box, 'flood@example.com', 'enterprise');
    const server = await startServer(box);
    try {
      const before = await countsOf(server.url);
      const result = await autocannon({
        url: `${server.url}/v1/ai`,
        method: 'POST',
        connections,
        duration: floodSeconds,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'echo', prompt: 'hello' }),
      });
      const after = await countsOf(server.url);
      const accepted = after.accepted - before.accepted;
      const completed = after.completed - before.completed;
      const refused = result.statusCodeStats['503']?.count ?? 0;
      console.log(
        `flood: ${accepted} accepted, ${refused} refused (503), ${completed} completed during the flood: ratio ${(completed / accepted).toFixed(2)}`,
      );
      expect(result.errors).toBe(0);
      // Only 202 and 503 were answered.
      expect(result['2xx'] + refused).toBe(result['2xx'] + result.non2xx);
      expect(accepted).toBeGreaterThan(0);
      expect(completed).toBeGreaterThanOrEqual(factor * accepted);

      // The queue drains: every accepted request completes.
      let drained = after;
      for (let waited = 0; waited < 60_000 && drained.completed < drained.accepted; waited += 100) {
        await sleep(100);
        drained = await countsOf(server.url);
      }
      expect(drained.completed - before.completed).toBe(drained.accepted - before.accepted);
    } finally {
      await server.stop();
    }
  });
});
