import { describe, expect, it } from 'vitest';
import type { Principal } from '../../src/app/Auth.js';
import type { ModelConfig } from '../../src/config.js';
import { type ManualClock, systemClock } from '../../src/ports/Clock.js';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';
import { dataDirViewDifferences } from '../support/lmdbData.js';
import { submit } from '../support/submit.js';
import { eventually, syncReads, type TestApp, tempDataDir, testApps } from '../support/testApp.js';

const echo = (id: string, delayMs: number): ModelConfig => ({ id, provider: 'echo', delayMs, timeoutMs: 60_000 });

const typesOf = (app: TestApp, reqId: string) =>
  [...syncReads(app).events()].filter((e) => 'reqId' in e && e.reqId === reqId).map((e) => e.type);

describe('Cancelling a request', () => {
  const start = testApps();
  const principalOf = (account: { accountId: string; keyId: string }): Principal =>
    ({ accountId: account.accountId, keyId: account.keyId, plan: 'scale' }) as Principal;

  it('stops a waiting request from ever being processed, and GET /v1/ai answers 404 saying it was cancelled', async () => {
    // One worker, busy with a slow request: the second one waits in the queue.
    const app = await start({
      config: { models: [echo('slow', 300)], processing: { concurrency: 1, maxAttempts: 3 } },
    });
    const account = await app.account('scale');
    await submit(app, account.key, { model: 'slow', prompt: 'cancel me' });
    const waiting = await submit(app, account.key, { model: 'slow', prompt: 'cancel me' });
    expect(syncReads(app).request(waiting)?.status).toBe('waiting');
    const view = await app.requests.cancel(principalOf(account), waiting);
    expect(view).toMatchObject({ status: 'cancelled' });
    await app.processor.idle();
    expect(typesOf(app, waiting)).toEqual(['RequestQueued', 'RequestCancelled']);
    const poll = await app.call('GET', `/v1/ai?req_id=${waiting}`, { key: account.key });
    expect(poll.status).toBe(404);
    expect(await poll.json()).toMatchObject({
      error: { code: 'not_found', message: expect.stringMatching(/cancelled/) },
    });
    // The prompt is not kept once nothing will use it.
    expect(syncReads(app).requestWithText(waiting)?.text).toBeUndefined();
  });

  it('aborts the model call in flight and drops a result that would arrive later', async () => {
    // Neither the echo's answer (10 minutes) nor the lease keeper's first renewal (a third of an hour's lease), which
    // would abort the call too, comes within the test's timeout: the attempt ending at all (the processor idle) means
    // the cancel itself aborted the call, not the time it took. No bound on that time.
    const app = await start({ config: { models: [echo('slow', 600_000)], processing: { leaseSeconds: 3_600 } } });
    const account = await app.account('scale');
    const reqId = await submit(app, account.key, { model: 'slow', prompt: 'cancel me' });
    await eventually(() => (syncReads(app).request(reqId)?.status === 'processing' ? true : undefined));
    await app.requests.cancel(principalOf(account), reqId);
    await app.processor.idle();
    expect(typesOf(app, reqId)).toEqual(['RequestQueued', 'RequestProcessingStarted', 'RequestCancelled']);
    expect(syncReads(app).request(reqId)?.status).toBe('cancelled');
  });

  it('aborts the upstream call of an openai model when its request is cancelled', async () => {
    const upstream = await startFakeOpenAi({ delayMs: 10_000 });
    try {
      const app = await start({
        clock: systemClock,
        config: {
          models: [
            {
              id: 'up',
              provider: 'openai',
              baseUrl: upstream.baseUrl,
              upstreamModel: 'm',
              timeoutMs: 60_000,
              maxRetries: 0,
            } as ModelConfig,
          ],
        },
      });
      const account = await app.account('scale');
      const reqId = await submit(app, account.key, { model: 'up', prompt: 'cancel me' });
      await eventually(() => (upstream.received.length > 0 ? true : undefined));
      await app.requests.cancel(principalOf(account), reqId);
      await app.processor.idle();
      expect(typesOf(app, reqId)).toEqual(['RequestQueued', 'RequestProcessingStarted', 'RequestCancelled']);
    } finally {
      await upstream.close();
    }
  });

  it('answers a second cancel with the cancelled request, and refuses to cancel a completed one', async () => {
    const app = await start({ config: { models: [echo('echo', 0), echo('slow', 60_000)] } });
    const account = await app.account('scale');
    const slow = await submit(app, account.key, { model: 'slow', prompt: 'cancel me' });
    await app.requests.cancel(principalOf(account), slow);
    expect(await app.requests.cancel(principalOf(account), slow)).toMatchObject({ status: 'cancelled' });
    const done = await submit(app, account.key, { model: 'echo', prompt: 'cancel me' });
    await eventually(() => (syncReads(app).request(done)?.status === 'completed' ? true : undefined));
    const refused = await app.requests.cancel(principalOf(account), done);
    expect(refused).toMatchObject({ _tag: 'InvalidRequest', message: expect.stringMatching(/completed/) });
  });

  it("answers another account's request as unknown", async () => {
    const app = await start({ config: { models: [echo('slow', 60_000)] } });
    const owner = await app.account('scale');
    const stranger = await app.account('scale');
    const reqId = await submit(app, owner.key, { model: 'slow', prompt: 'cancel me' });
    expect(await app.requests.cancel(principalOf(stranger), reqId)).toMatchObject({ _tag: 'NotFound' });
    expect(syncReads(app).request(reqId)?.status).not.toBe('cancelled');
  });

  it('leaves views that replay --verify rebuilds exactly, cancelled requests and their expiry included', async () => {
    const dataDir = tempDataDir('airs-cancel');
    const app = await start({ dataDir, config: { models: [echo('slow', 60_000)], requestTtlSeconds: 60 } });
    const account = await app.account('scale');
    const ids = [
      await submit(app, account.key, { model: 'slow', prompt: 'cancel me' }),
      await submit(app, account.key, { model: 'slow', prompt: 'cancel me' }),
    ];
    for (const reqId of ids) await app.requests.cancel(principalOf(account), reqId);
    (app.clock as ManualClock).advance(61_000);
    await app.sweeper.sweep();
    expect(typesOf(app, ids[0] as string)).toContain('RequestExpired');
    expect(await dataDirViewDifferences(dataDir)).toEqual([]);
  });
});
