import { request } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultPlans } from '../../src/domain/plans.js';
import { systemClock } from '../../src/ports/Clock.js';
import { eventually, listen, loggedEvents, startTestApp, type TestApp } from '../support/testApp.js';

/**
 * A create that waits for its result (`POST /v1/responses` without `background`) must hold only what it needs while
 * it waits (the request's id and model), never its parsed body: measured as the V8 heap in use, after a full
 * collection, while the calls wait. Heap, not RSS: a collection gives heap back to V8 long before it gives pages back
 * to the system, and the client here shares the process (its bodies are Buffers, outside the V8 heap).
 */

setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as () => void;
const heapAfterCollection = () => {
  collect();
  collect();
  return process.memoryUsage().heapUsed;
};

const waiting = 30;

/** 49,990 distinct strings (about 4 MB of JSON with their keys), in a field no route keeps: an unknown field of a
 * Responses create, an unknown field of a chat message (chat completions refuse unknown fields at the top; `metadata`
 * is kept with the request, and bounded). */
const heavyExtra = Object.fromEntries(
  Array.from({ length: 49_990 }, (_, i) => [`key-${i}`, `value-${String(i).padStart(8, '0')}-of-a-heavy-body`]),
);

/** Bodies within every bound whose parse is large, for each waiting create. */
const heavyBodies = {
  '/v1/responses': Buffer.from(JSON.stringify({ model: 'slow', input: 'hello', extra: heavyExtra })),
  '/v1/chat/completions': Buffer.from(
    JSON.stringify({ model: 'slow', messages: [{ role: 'user', content: 'hello', extra: heavyExtra }] }),
  ),
};

/** One call over a real socket; the body is the shared Buffer, so the client adds nothing per call to the heap. */
const post = (url: string, path: string, key: string, body: Buffer) =>
  new Promise<{ status: number; text: string }>((resolve, reject) => {
    const call = request(
      `${url}${path}`,
      {
        method: 'POST',
        agent: false,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': body.length },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
      },
    );
    call.on('error', reject);
    call.end(body);
  });

let app: TestApp | undefined;
let server: { close(): void } | undefined;
afterEach(async () => {
  server?.close();
  await app?.stop();
});

describe('A waiting create on the OpenAI face', () => {
  it.each([
    ['/v1/responses', '200 cancelled', (text: string) => `200 ${(JSON.parse(text) as { status: string }).status}`],
    ['/v1/chat/completions', '404 not_found', (text: string) => `404 ${JSON.parse(text).error.code as string}`],
  ] as const)(
    '%s holds less than a quarter of its parsed body while it waits for the model',
    async (path, cancelledAnswer, answerOf) => {
      const heavyBody = heavyBodies[path];
      app = await startTestApp({
        clock: systemClock,
        config: {
          // The model never answers within the test: the calls wait until the test cancels their requests.
          models: [{ id: 'slow', provider: 'echo', delayMs: 600_000, timeoutMs: 900_000 }],
          processing: { concurrency: 64, maxAttempts: 1 },
          // The calls wait at once, all from one account: more than the free plan's 10 open calls.
          plans: { ...defaultPlans, free: { ...defaultPlans.free, submitsPerMinute: 10_000, maxOpenCalls: 1_000 } },
        },
      });
      const served = await listen(app);
      server = served;
      const { key, accountId, keyId } = await app.account();

      // What one parsed body weighs on the heap, and a first call so that the code paths are warm.
      const beforeParse = heapAfterCollection();
      const parsed = JSON.parse(heavyBody.toString('utf8')) as unknown;
      const bodyOnHeap = heapAfterCollection() - beforeParse;
      expect(parsed).toBeDefined();
      expect(bodyOnHeap).toBeGreaterThan(4_000_000);
      expect(
        (await post(served.url, '/v1/responses', key, Buffer.from('{"model":"slow","input":"warm","background":true}')))
          .status,
      ).toBe(200);

      const baseline = heapAfterCollection();
      const queued = async () =>
        (await loggedEvents(app as TestApp)).flatMap((e) =>
          e.type === 'RequestQueued' && e.accountId === accountId ? [e.reqId] : [],
        );
      const calls = Array.from({ length: waiting }, () => post(served.url, path, key, heavyBody));
      // Every call is queued and now waits for the model, which does not answer.
      await eventually(async () => ((await queued()).length === waiting + 1 ? true : undefined), 30_000);
      const growth = heapAfterCollection() - baseline;
      // Cancelling the requests ends the waits: each call answers that its request was cancelled.
      for (const reqId of await queued())
        await (app as TestApp).requests.cancel({ accountId, keyId, plan: 'free' }, reqId);
      const answers = await Promise.all(calls);

      console.log(
        `parsed body: ${(bodyOnHeap / 1e6).toFixed(1)} MB on the heap; ${waiting} creates waiting: heap grew ${(growth / 1e6).toFixed(1)} MB`,
      );
      expect(answers.map((a) => answerOf(a.text))).toEqual(Array.from({ length: waiting }, () => cancelledAnswer));
      expect(growth).toBeLessThan((waiting * bodyOnHeap) / 4);
    },
    60_000,
  );
});
