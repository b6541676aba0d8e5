import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createAccountWithKey, fileSandboxes, type ServerProcess, sleep, startServer } from '../support/processes.js';

/**
 * Issue 26's stream flood on a real `airs serve`, scaled down: six free accounts open retrieve streams
 * (`GET /v1/responses/{id}?stream=true`, one poll each) on a model that never answers, as fast as they can, for a few
 * seconds. Before contract 18 nothing bounded them: six accounts at their poll budget took all 4,096 connections
 * (`http.maxConnections`) within 10 s, after which every new connection was reset (`/healthz` and other accounts'
 * submits included) and the RSS reached 650 MB. Here each account may hold 4 open calls (`maxOpenCalls`) and the
 * process 20 (`maxLongCallsShare` 0.5 of 40 connections): each account stops at its cap with `429`, and once the
 * process holds 20, further streams get `503`, while a seventh account's submits and `/healthz` answer throughout.
 *
 * The bound on the server's peak RSS (VmHWM): its RSS once started plus 100 MB. What the flood may cost: 20 held
 * streams (each a socket, its buffers, a listener: about 60 KB, measured on 1,500 streams; 1.2 MB here) and the garbage
 * of a few thousand refused calls (a few KB each, collected as V8 sees fit), under 50 MB; the rest is margin for V8
 * growing its heap on a loaded 2-core machine. The unbounded flood of issue 26 took 650 MB, over 500 MB above the
 * start. Measured here: about 120 MB at the start and a peak about 30 MB above it (printed), most of it the start of
 * the first calls (the background requests, the first streams), not the refused flood.
 */

const newBox = fileSandboxes();

const attackers = 6;
const maxOpenCalls = 4;
const maxConnections = 40;
const maxLongCalls = 20;
const attackMs = 4_000;

/** The server's resident memory now and at its peak, in MB (Linux's /proc). */
const memoryOf = (server: ServerProcess) => {
  const status = readFileSync(`/proc/${server.child.pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024 };
};

const auth = (key: string) => ({ authorization: `Bearer ${key}` });

const backgroundRequest = async (url: string, key: string) => {
  const created = await fetch(`${url}/v1/responses`, {
    method: 'POST',
    headers: { ...auth(key), 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'never', input: 'followed', background: true }),
  });
  expect(created.status).toBe(200);
  return ((await created.json()) as { id: string }).id;
};

describe('A stream flood from six accounts (a real airs serve)', { timeout: 180_000 }, () => {
  it('stops each account at its maxOpenCalls with 429 and all of them at the long-call share with 503, while another account’s submits and /healthz answer and the RSS stays within its bound', async () => {
    const box = newBox('airs-open-calls');
    box.writeConfig({
      models: [
        { id: 'never', provider: 'echo', delayMs: 600_000, timeoutMs: 900_000 },
        { id: 'echo', provider: 'echo' },
      ],
      processing: { concurrency: 2, maxAttempts: 1 },
      plans: { free: { maxOpenCalls, submitsPerMinute: 60_000, pollsPerMinute: 600_000 } },
      http: { maxConnections, maxLongCallsShare: 0.5 },
    });
    const accounts: { key: string }[] = [];
    for (let i = 0; i <= attackers; i++)
      accounts.push(await createAccountWithKey(box, `tenant${i}@example.com`, 'free'));
    const [bystander, ...flooders] = accounts as [{ key: string }, ...{ key: string }[]];
    const server = await startServer(box);
    const { url } = server;
    const followed = await Promise.all(flooders.map(({ key }) => backgroundRequest(url, key)));
    await sleep(500);
    const baseline = memoryOf(server);

    // The bystander submits and probes all along; every answer must come.
    const bystanderAnswers: number[] = [];
    let attacking = true;
    const bystanding = (async () => {
      while (attacking) {
        const submitted = await fetch(`${url}/v1/ai`, {
          method: 'POST',
          headers: { ...auth(bystander.key), 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'echo', prompt: 'still here' }),
        });
        await submitted.arrayBuffer();
        const health = await fetch(`${url}/healthz`);
        await health.arrayBuffer();
        bystanderAnswers.push(submitted.status, health.status);
        await sleep(50);
      }
    })();

    // Each flooder opens streams one after another until the attack ends; a held stream stays open (its answer is
    // kept: undici cancels the body of a Response it collects, which would close the connection).
    const held: { readonly abort: AbortController; readonly response: Response }[] = [];
    const flood = flooders.map(async ({ key }, i) => {
      const statuses: number[] = [];
      const until = Date.now() + attackMs;
      while (Date.now() < until) {
        const abort = new AbortController();
        const response = await fetch(`${url}/v1/responses/${followed[i]}?stream=true`, {
          headers: auth(key),
          signal: abort.signal,
        });
        statuses.push(response.status);
        if (response.status === 200) held.push({ abort, response });
        else {
          expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
          const { error } = (await response.json()) as { error: { code: string; message: string } };
          expect(error.code).toBe(response.status === 429 ? 'rate_limited' : 'server_error');
        }
      }
      return statuses;
    });
    const statuses = await Promise.all(flood);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    attacking = false;
    await bystanding;
    const after = memoryOf(server);
    const boundMb = baseline.rssMb + 100;
    const refusals = statuses.flat().filter((s) => s !== 200).length;
    console.log(
      `airs serve RSS: ${baseline.rssMb.toFixed(0)} MB started, peak ${after.peakMb.toFixed(0)} MB (bound ${boundMb.toFixed(0)} MB), ` +
        `${after.rssMb.toFixed(0)} MB after; ${held.length} streams held, ${refusals} refused; ` +
        `${bystanderAnswers.length / 2} bystander rounds`,
    );

    // Each account holds at most its cap, all together exactly the process's share.
    const heldBy = statuses.map((s) => s.filter((status) => status === 200).length);
    for (const count of heldBy) expect(count).toBeLessThanOrEqual(maxOpenCalls);
    expect(held.length).toBe(maxLongCalls);
    for (const [i, mine] of statuses.entries()) {
      // An account's streams were answered first; then every call was refused, with 429 once it held its cap.
      const firstRefusal = mine.findIndex((status) => status !== 200);
      expect(firstRefusal).toBe(heldBy[i]);
      const refused = new Set(mine.slice(firstRefusal));
      expect(refused.has(200)).toBe(false);
      if (heldBy[i] === maxOpenCalls) expect(refused).toEqual(new Set([429]));
      else expect(refused).toContain(503);
    }
    // Six accounts want 24 places and the process has 20: some were refused by the share.
    expect(statuses.flat().filter((s) => s === 503).length).toBeGreaterThan(0);
    expect(metrics).toMatch(new RegExp(`^airs_long_calls_open ${maxLongCalls}$`, 'm'));
    // The bystander was answered all along.
    expect(bystanderAnswers.length).toBeGreaterThan(10);
    expect(new Set(bystanderAnswers)).toEqual(new Set([200, 202]));
    expect(after.peakMb).toBeLessThan(boundMb);

    // The flooders go away: every place comes back, and an account can open its whole cap again.
    for (const { abort } of held) abort.abort();
    for (let tries = 0; ; tries++) {
      const text = await (await fetch(`${url}/metrics`)).text();
      if (/^airs_long_calls_open 0$/m.test(text)) break;
      expect(tries).toBeLessThan(100);
      await sleep(50);
    }
    const again: { readonly abort: AbortController; readonly response: Response }[] = [];
    for (let i = 0; i < maxOpenCalls; i++) {
      const abort = new AbortController();
      const response = await fetch(`${url}/v1/responses/${followed[0]}?stream=true`, {
        headers: auth(flooders[0]?.key ?? ''),
        signal: abort.signal,
      });
      again.push({ abort, response });
      expect(response.status).toBe(200);
    }
    for (const { abort } of again) abort.abort();
    await server.stop();
  });
});
