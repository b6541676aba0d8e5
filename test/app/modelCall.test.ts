import { describe, expect, it } from 'vitest';
import { echoProvider } from '../../src/adapters/models/echo.js';
import type { Model } from '../../src/app/Models.js';
import { createModelCaller } from '../../src/app/processing/modelCall.js';

/** A model whose provider never answers and ignores its signal. */
const stuck = (timeoutMs: number): Model => ({
  config: { id: 'stuck', provider: 'echo', delayMs: 0, timeoutMs },
  provider: { generate: () => new Promise(() => {}) },
});

const within = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([promise, new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), ms))]);

describe('A model call', () => {
  it('ends at its timeout even when the model ignores its signal, for every call begun in the same turn', async () => {
    const caller = createModelCaller(undefined);
    const model = stuck(50);
    const calls = [1, 2, 3].map((n) => caller.call(`req_${n}`, model, { prompt: 'x' }));
    const outcomes = await within(Promise.all(calls), 2_000);
    // A timeout is the upstream's failure: another upstream of the model may answer (contract 19).
    expect(outcomes).toEqual([1, 2, 3].map(() => ({ ok: false, reason: 'timed out after 50 ms', upstreams: true })));
  });

  it('ends at once when the pool stops, and a call begun after the stop never waits for its model', async () => {
    const caller = createModelCaller(undefined);
    const model = stuck(600_000);
    const running = caller.call('req_1', model, { prompt: 'x' });
    await new Promise((resolve) => setImmediate(resolve));
    caller.stop();
    const outcome = await within(running, 2_000);
    expect(outcome).not.toBe('still running');
    expect(outcome).toMatchObject({ ok: false });
    const late = await within(caller.call('req_2', model, { prompt: 'x' }), 2_000);
    expect(late).toMatchObject({ ok: false });
  });

  it('answers a provider that answers at once (echo without a delay) without a timer, and fails it once the pool stopped', async () => {
    const caller = createModelCaller(undefined);
    const model: Model = {
      config: { id: 'echo', provider: 'echo', delayMs: 0, timeoutMs: 1_000 },
      provider: echoProvider({ delayMs: 0 }),
    };
    const timersBefore = process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const calling = caller.call('req_1', model, { prompt: 'hi there' });
    expect(process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length).toBe(timersBefore);
    expect(await calling).toMatchObject({ ok: true, generation: { text: 'hi there' } });
    caller.stop();
    expect(await caller.call('req_2', model, { prompt: 'hi' })).toMatchObject({ ok: false });
  });

  it('answers with the model’s generation when it answers in time', async () => {
    const caller = createModelCaller(undefined);
    const model: Model = {
      config: { id: 'quick', provider: 'echo', delayMs: 0, timeoutMs: 1_000 },
      provider: { generate: async ({ prompt }) => ({ text: prompt.toUpperCase(), finishReason: 'stop' }) },
    };
    expect(await caller.call('req_1', model, { prompt: 'hi' })).toEqual({
      ok: true,
      generation: { text: 'HI', finishReason: 'stop' },
    });
  });
});
