import { describe, expect, it } from 'vitest';
import { idempotencyWindowMs } from '../../src/domain/commands.js';
import type { ManualClock } from '../../src/ports/Clock.js';
import { dataDirViewDifferences } from '../support/lmdbData.js';
import { postSubmission } from '../support/submit.js';
import { loggedEvents, type TestApp, tempDataDir, testApps } from '../support/testApp.js';

const queuedOf = async (app: TestApp, accountId: string) =>
  (await loggedEvents(app)).filter((e) => e.type === 'RequestQueued' && e.accountId === accountId);

describe('Idempotency-Key on POST /v1/ai', () => {
  const start = testApps();

  it('answers a repeat with the same key and body with the first request, marked as replayed, and creates nothing', async () => {
    const app = await start();
    const { key, accountId } = await app.account('scale');
    const body = { prompt: 'once only' };
    const first = await postSubmission(app, key, { ...body, idempotencyKey: 'key-1' });
    expect(first.status).toBe(202);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await postSubmission(app, key, { ...body, idempotencyKey: 'key-1' });
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const firstBody = (await first.json()) as { request_id: string };
    expect(await again.json()).toEqual(firstBody);
    expect(again.headers.get('location')).toBe(`/v1/ai?req_id=${firstBody.request_id}`);
    expect(await queuedOf(app, accountId)).toHaveLength(1);
    // The same body in another key order is the same body.
    const reordered = await app.call('POST', '/v1/ai', {
      key,
      body: { prompt: 'once only', model: 'echo' },
      headers: { 'idempotency-key': 'key-1' },
    });
    expect(reordered.status).toBe(202);
    expect(await queuedOf(app, accountId)).toHaveLength(1);
  });

  it('refuses the same key with another body with 422 idempotency_key_reused and creates nothing', async () => {
    const app = await start();
    const { key, accountId } = await app.account('scale');
    expect((await postSubmission(app, key, { prompt: 'a', idempotencyKey: 'k' })).status).toBe(202);
    const other = await postSubmission(app, key, { prompt: 'b', idempotencyKey: 'k' });
    expect(other.status).toBe(422);
    expect(await other.json()).toMatchObject({ error: { code: 'idempotency_key_reused' } });
    expect(await queuedOf(app, accountId)).toHaveLength(1);
  });

  it('makes exactly one request from many concurrent repeats', async () => {
    const app = await start();
    const { key, accountId } = await app.account('enterprise');
    const body = { prompt: 'concurrent' };
    const answers = await Promise.all(
      Array.from({ length: 40 }, () => postSubmission(app, key, { ...body, idempotencyKey: 'same-key' })),
    );
    const bodies = await Promise.all(answers.map((a) => a.json() as Promise<{ request_id: string }>));
    expect(answers.every((a) => a.status === 202)).toBe(true);
    expect(new Set(bodies.map((b) => b.request_id)).size).toBe(1);
    expect(answers.filter((a) => a.headers.get('idempotent-replayed') === 'true')).toHaveLength(39);
    expect(await queuedOf(app, accountId)).toHaveLength(1);
  });

  it('keeps the keys of different accounts apart', async () => {
    const app = await start();
    const one = await app.account('scale');
    const two = await app.account('scale');
    const a = await postSubmission(app, one.key, { prompt: 'x', idempotencyKey: 'shared' });
    const b = await postSubmission(app, two.key, { prompt: 'y', idempotencyKey: 'shared' });
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
    expect(((await a.json()) as { request_id: string }).request_id).not.toBe(
      ((await b.json()) as { request_id: string }).request_id,
    );
  });

  it("makes a new request for a key whose window has passed, and LMDB's replay --verify finds the index as the log calls for", async () => {
    const dataDir = tempDataDir('airs-idem');
    const app = await start({ store: 'lmdb', dataDir, config: { requestTtlSeconds: 25 * 3600 } });
    const clock = app.clock as ManualClock;
    const { key, accountId } = await app.account('scale');
    const body = { prompt: 'daily' };
    const first = (await (await postSubmission(app, key, { ...body, idempotencyKey: 'daily' })).json()) as {
      request_id: string;
    };
    clock.advance(idempotencyWindowMs - 1);
    expect((await (await postSubmission(app, key, { ...body, idempotencyKey: 'daily' })).json()) as unknown).toEqual(
      first,
    );
    clock.advance(1);
    const later = await postSubmission(app, key, { ...body, idempotencyKey: 'daily' });
    expect(later.headers.get('idempotent-replayed')).toBeNull();
    const second = (await later.json()) as { request_id: string };
    expect(second.request_id).not.toBe(first.request_id);
    expect(await queuedOf(app, accountId)).toHaveLength(2);
    // The older request's expiry (25 h after it was made) leaves the entry to the newer one.
    clock.advance(3600 * 1000 + 1);
    await app.sweeper.sweep();
    expect((await (await postSubmission(app, key, { ...body, idempotencyKey: 'daily' })).json()) as unknown).toEqual(
      second,
    );
    await app.processor.idle();
    expect(await dataDirViewDifferences(dataDir)).toEqual([]);
  });

  it('refuses an Idempotency-Key that is empty, too long or not visible ASCII with 400', async () => {
    const app = await start();
    const { key } = await app.account('scale');
    for (const bad of ['', 'x'.repeat(256), 'has space', 'tab\there', 'ümlaut']) {
      const answer = await postSubmission(app, key, { prompt: 'p', idempotencyKey: bad });
      expect(answer.status, JSON.stringify(bad)).toBe(400);
      expect(await answer.json()).toMatchObject({ error: { code: 'invalid_request' } });
    }
    expect((await postSubmission(app, key, { prompt: 'p', idempotencyKey: 'x'.repeat(255) })).status).toBe(202);
  });
});
