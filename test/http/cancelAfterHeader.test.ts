import { describe, expect, it } from 'vitest';
import { cancelAfterOf } from '../../src/app/cancelAfter.js';
import type { ModelConfig } from '../../src/config.js';
import { InvalidRequest } from '../../src/domain/errors.js';
import type { ManualClock } from '../../src/ports/Clock.js';
import { loggedEvents, requestInit, servedTestApps } from '../support/testApp.js';

/**
 * The `Cancel-After` header (contract 20) on every submit route, over a real socket: a bad value answers
 * `400 invalid_request` naming the header, in each face's error shape, and queues nothing; a good one is the
 * request's deadline, and a Response cancelled at it says `deadline` in its `error` and `incomplete_details`.
 */

const echo = (id: string, delayMs: number): ModelConfig => ({ id, provider: 'echo', delayMs, timeoutMs: 60_000 });
const ttlSeconds = 3_600;

const routes = [
  { path: '/v1/ai', body: { model: 'echo', prompt: 'hello' } },
  { path: '/v1/responses', body: { model: 'echo', input: 'hello', background: true } },
  { path: '/v1/chat/completions', body: { model: 'echo', messages: [{ role: 'user', content: 'hello' }] } },
] as const;

/** Not a duration, a unit airs does not read, out of bounds (below 1 s, past the lifetime), or far too long. */
const badValues = ['soon', '', '0', '0s', '1.5', '-5', '5 m', '10d', `${ttlSeconds + 1}`, '61m', '2h', '9'.repeat(40)];

describe('The Cancel-After header', () => {
  const start = servedTestApps();

  it.each(routes)(
    'refuses a bad value on POST $path with 400 invalid_request naming the header, queuing nothing',
    async ({ path, body }) => {
      const { app, served } = await start({ config: { models: [echo('echo', 0)], requestTtlSeconds: ttlSeconds } });
      const account = await app.account('scale');
      for (const value of badValues) {
        const answer = await fetch(
          `${served.url}${path}`,
          requestInit('POST', { key: account.key, body, headers: { 'cancel-after': value } }),
        );
        const error = ((await answer.json()) as { error: { code: string; message: string; param?: string } }).error;
        expect({ value, status: answer.status }).toEqual({ value, status: 400 });
        expect(error.code).toBe('invalid_request');
        expect(error.message).toMatch(/^Cancel-After /);
        if (path !== '/v1/ai') expect(error.param).toBe('Cancel-After');
      }
      expect((await loggedEvents(app)).filter((event) => event.type === 'RequestQueued')).toEqual([]);
      // The process keeps serving: the same call with a good value is queued.
      const good = await fetch(
        `${served.url}${path}`,
        requestInit('POST', { key: account.key, body, headers: { 'cancel-after': '90' } }),
      );
      expect(good.status).toBeLessThan(300);
      const queued = (await loggedEvents(app)).find((event) => event.type === 'RequestQueued');
      expect(queued).toMatchObject({ deadlineAt: (queued as { at: number }).at + 90_000 });
    },
  );

  it('reads seconds, minutes and hours, from 1 second to the request lifetime', () => {
    expect(cancelAfterOf('90', ttlSeconds)).toBe(90_000);
    expect(cancelAfterOf('30s', ttlSeconds)).toBe(30_000);
    expect(cancelAfterOf('5m', ttlSeconds)).toBe(300_000);
    expect(cancelAfterOf('1h', ttlSeconds)).toBe(3_600_000);
    expect(cancelAfterOf('1', ttlSeconds)).toBe(1_000);
    expect(cancelAfterOf(`${ttlSeconds}`, ttlSeconds)).toBe(ttlSeconds * 1_000);
    expect(cancelAfterOf(null, ttlSeconds)).toBeUndefined();
    expect(cancelAfterOf('2h', ttlSeconds)).toBeInstanceOf(InvalidRequest);
    expect(cancelAfterOf('0', ttlSeconds)).toBeInstanceOf(InvalidRequest);
  });

  it('shows a Response cancelled at its deadline with reason deadline in its error and incomplete_details', async () => {
    const { app, served } = await start({
      config: { models: [echo('slow', 600_000)], processing: { concurrency: 1, leaseSeconds: 3_600 } },
    });
    const account = await app.account('scale');
    const create = async (cancelAfter?: string) => {
      const answer = await fetch(
        `${served.url}/v1/responses`,
        requestInit('POST', {
          key: account.key,
          body: { model: 'slow', input: 'hello', background: true },
          headers: cancelAfter === undefined ? {} : { 'cancel-after': cancelAfter },
        }),
      );
      return ((await answer.json()) as { id: string }).id;
    };
    // The one worker is busy with a request without a deadline; the one with a deadline waits behind it.
    await create();
    const id = await create('10s');
    (app.clock as ManualClock).advance(10_000);
    await app.sweeper.sweep();
    const answer = await fetch(`${served.url}/v1/responses/${id}`, requestInit('GET', { key: account.key }));
    expect(await answer.json()).toMatchObject({
      status: 'cancelled',
      error: { code: 'deadline', message: expect.stringMatching(/deadline \(Cancel-After\)/) },
      incomplete_details: { reason: 'deadline' },
    });
  });
});
