import { afterEach, describe, expect, it } from 'vitest';
import type { Principal } from '../../src/app/Auth.js';
import type { ModelConfig } from '../../src/config.js';
import type { StoredEvent } from '../../src/domain/events.js';
import type { ManualClock } from '../../src/ports/Clock.js';
import { submit } from '../support/submit.js';
import {
  eventually,
  loggedEvents,
  startTestApp,
  type TestApp,
  type TestAppOptions,
  type TestConfig,
} from '../support/testApp.js';
import type { StoreKind } from '../support/testStore.js';

/**
 * Deadlines (contract 20): a `Cancel-After` submit is cancelled with reason `deadline` once that long has passed
 * since its creation and it has not ended: never started while queued, its call aborted while it runs. On LMDB and
 * on PostgreSQL (two nodes on one database too); time is the tests' manual clock, moved by hand.
 */

const echo = (id: string, delayMs: number): ModelConfig => ({ id, provider: 'echo', delayMs, timeoutMs: 60_000 });

/** One worker; `slow` never answers within a test (its call ends only when aborted); `echo` answers at once. A lease
 * of an hour: nothing but the deadline ends an attempt. */
const config: TestConfig = {
  models: [echo('slow', 600_000), echo('echo', 0)],
  processing: { concurrency: 1, maxAttempts: 3, leaseSeconds: 3_600 },
};

const apps: TestApp[] = [];
afterEach(async () => {
  // The last started first: a second node on a store stops (keeping it) before the one that removes the store.
  const started = apps.splice(0);
  for (let app = started.pop(); app !== undefined; app = started.pop()) {
    const shared = app.testStore;
    await app.stop({ keepData: started.some((other) => other.testStore === shared) });
  }
});
const start = async (options: TestAppOptions) => {
  const app = await startTestApp({ ...options, config: { ...config, ...options.config } });
  apps.push(app);
  return app;
};

const principalOf = (account: { accountId: string; keyId: string }): Principal =>
  ({ accountId: account.accountId, keyId: account.keyId, plan: 'scale' }) as Principal;

const eventsOf = async (app: TestApp, reqId: string) =>
  (await loggedEvents(app)).filter((event) => 'reqId' in event && event.reqId === reqId);
const typesOf = async (app: TestApp, reqId: string) => (await eventsOf(app, reqId)).map((event) => event.type);
const statusOf = async (app: TestApp, reqId: string) => (await app.store.reads.request(reqId))?.status;
const cancelOf = async (app: TestApp, reqId: string): Promise<StoredEvent | undefined> =>
  (await eventsOf(app, reqId)).find((event) => event.type === 'RequestCancelled');
const advance = (app: TestApp, ms: number) => (app.clock as ManualClock).advance(ms);

describe.each<StoreKind>(['lmdb', 'postgres'])('A Cancel-After deadline on %s', (store) => {
  it('cancels a request still queued at its deadline with reason deadline, and it is never started', async () => {
    const app = await start({ store });
    const account = await app.account('scale');
    // The one worker is busy: the request with the deadline waits.
    const busy = await submit(app, account.key, { model: 'slow', prompt: 'a prompt with a deadline' });
    await eventually(async () => ((await statusOf(app, busy)) === 'processing' ? true : undefined));
    const reqId = await submit(app, account.key, {
      model: 'echo',
      prompt: 'a prompt with a deadline',
      headers: { 'cancel-after': '5s' },
    });
    const queued = (await eventsOf(app, reqId))[0];
    expect(queued).toMatchObject({ type: 'RequestQueued', deadlineAt: (queued as { at: number }).at + 5_000 });
    // A millisecond before the deadline the sweeper leaves it be.
    advance(app, 4_999);
    await app.sweeper.sweep();
    expect(await statusOf(app, reqId)).toBe('waiting');
    advance(app, 1);
    await app.sweeper.sweep();
    expect(await typesOf(app, reqId)).toEqual(['RequestQueued', 'RequestCancelled']);
    expect(await cancelOf(app, reqId)).toMatchObject({ reason: 'deadline' });
    const poll = await app.call('GET', `/v1/ai?req_id=${reqId}`, { key: account.key });
    expect(poll.status).toBe(404);
    expect(await poll.json()).toMatchObject({ error: { message: expect.stringMatching(/deadline \(Cancel-After\)/) } });
    // The busy request had no deadline: it runs on.
    expect(await statusOf(app, busy)).toBe('processing');
  });

  it('has the claim cancel a queued request past its deadline instead of starting it, before any sweep', async () => {
    const app = await start({ store });
    const account = await app.account('scale');
    const busy = await submit(app, account.key, { model: 'slow', prompt: 'a prompt with a deadline' });
    await eventually(async () => ((await statusOf(app, busy)) === 'processing' ? true : undefined));
    const reqId = await submit(app, account.key, {
      model: 'echo',
      prompt: 'a prompt with a deadline',
      headers: { 'cancel-after': '5' },
    });
    advance(app, 5_000);
    // The worker frees: the next claim finds the request past its deadline.
    await app.requests.cancel(principalOf(account), busy);
    await eventually(async () => ((await statusOf(app, reqId)) === 'cancelled' ? true : undefined));
    await app.processor.idle();
    expect(await typesOf(app, reqId)).toEqual(['RequestQueued', 'RequestCancelled']);
    expect(await cancelOf(app, reqId)).toMatchObject({ reason: 'deadline' });
  });

  it('aborts the upstream call of a running request at its deadline and records the cancel with reason deadline', async () => {
    const app = await start({ store });
    const account = await app.account('scale');
    const reqId = await submit(app, account.key, {
      model: 'slow',
      prompt: 'a prompt with a deadline',
      headers: { 'cancel-after': '1m' },
    });
    await eventually(async () => ((await statusOf(app, reqId)) === 'processing' ? true : undefined));
    advance(app, 60_000);
    await app.sweeper.sweep();
    // The call would run for ten minutes: the worker is idle again only because the cancel aborted it.
    await app.processor.idle();
    expect(await typesOf(app, reqId)).toEqual(['RequestQueued', 'RequestProcessingStarted', 'RequestCancelled']);
    expect(await cancelOf(app, reqId)).toMatchObject({ reason: 'deadline' });
  });

  it('leaves a request without a deadline, and one that ended before it, as they were', async () => {
    const app = await start({ store });
    const account = await app.account('scale');
    const done = await submit(app, account.key, {
      model: 'echo',
      prompt: 'a prompt with a deadline',
      headers: { 'cancel-after': '5s' },
    });
    await eventually(async () => ((await statusOf(app, done)) === 'completed' ? true : undefined));
    const plain = await submit(app, account.key, { model: 'slow', prompt: 'a prompt with a deadline' });
    advance(app, 10_000);
    await app.sweeper.sweep();
    expect(await statusOf(app, done)).toBe('completed');
    expect(await statusOf(app, plain)).toBe('processing');
  });
});

describe('A Cancel-After deadline on two PostgreSQL nodes', () => {
  it('is honoured by whichever node holds it: another node sweeps, the node running the request aborts its call', async () => {
    const first = await start({ store: 'postgres' });
    const account = await first.account('scale');
    const running = await submit(first, account.key, {
      model: 'slow',
      prompt: 'a prompt with a deadline',
      headers: { 'cancel-after': '30s' },
    });
    await eventually(async () => ((await statusOf(first, running)) === 'processing' ? true : undefined));
    // The second node shares the database and the clock; it holds a request of its own, queued behind its worker.
    const second = await start({ storeOf: first, clock: first.clock });
    const busy = await submit(second, account.key, { model: 'slow', prompt: 'a prompt with a deadline' });
    await eventually(async () => ((await statusOf(second, busy)) === 'processing' ? true : undefined));
    const queued = await submit(second, account.key, {
      model: 'echo',
      prompt: 'a prompt with a deadline',
      headers: { 'cancel-after': '30s' },
    });
    advance(first, 30_000);
    // Only the second node sweeps: the first hears the cancel of the request it runs, and aborts its call.
    await second.sweeper.sweep();
    await first.processor.idle();
    for (const reqId of [running, queued]) expect(await cancelOf(second, reqId)).toMatchObject({ reason: 'deadline' });
    expect(await typesOf(second, running)).toEqual(['RequestQueued', 'RequestProcessingStarted', 'RequestCancelled']);
    expect(await typesOf(second, queued)).toEqual(['RequestQueued', 'RequestCancelled']);
  });

  it('is honoured by the claim of the node that frees a worker, whichever node queued the request', async () => {
    const first = await start({ store: 'postgres' });
    const account = await first.account('scale');
    const busy = await submit(first, account.key, { model: 'slow', prompt: 'a prompt with a deadline' });
    await eventually(async () => ((await statusOf(first, busy)) === 'processing' ? true : undefined));
    const second = await start({ storeOf: first, clock: first.clock });
    const busyToo = await submit(second, account.key, { model: 'slow', prompt: 'a prompt with a deadline' });
    await eventually(async () => ((await statusOf(second, busyToo)) === 'processing' ? true : undefined));
    // Queued by the second node, behind both busy workers.
    const reqId = await submit(second, account.key, {
      model: 'echo',
      prompt: 'a prompt with a deadline',
      headers: { 'cancel-after': '5s' },
    });
    advance(first, 5_000);
    // The first node's worker frees; its claim finds the request past its deadline.
    await first.requests.cancel(principalOf(account), busy);
    await eventually(async () => ((await statusOf(first, reqId)) === 'cancelled' ? true : undefined));
    expect(await typesOf(first, reqId)).toEqual(['RequestQueued', 'RequestCancelled']);
    expect(await cancelOf(first, reqId)).toMatchObject({ reason: 'deadline' });
  });
});
