import { afterEach, describe, expect, it, vi } from 'vitest';
import type { CommitterShape } from '../../../src/app/Committer.js';
import type { Model, ModelsShape } from '../../../src/app/Models.js';
import { type Attempt, createAttemptRunner } from '../../../src/app/processing/attempts.js';
import { createModelCaller } from '../../../src/app/processing/modelCall.js';
import { defaultRetryPolicy } from '../../../src/domain/request/retryPolicy.js';
import { ManualClock } from '../../../src/ports/Clock.js';
import { silentLogger } from '../../../src/ports/Logger.js';
import type { Generation } from '../../../src/ports/ModelProvider.js';
import type { StoreShape } from '../../../src/ports/Store.js';
import type { Held, Recorded, StoredAnswer, WorkQueueShape } from '../../../src/ports/WorkQueue.js';

const owner = 'owner_a';
const attempt: Attempt = { reqId: 'req_a', attempt: 2 };

/**
 * The attempt runner over the real model caller, with stand-ins for the store's reads and the queue's writes (what
 * the test decides: the stored request, and how each write answers). `happened` is the order of what it did.
 */
const runnerOver = (options: {
  readonly generate?: (prompt: string) => Promise<Generation>;
  /** The request as a read finds it: its status and end of life (a refused outcome reads it for why). */
  readonly now?: { readonly status: string; readonly expiresAt: number };
  /** How each write of an outcome answers, in turn (the last one again after that). */
  readonly writes?: readonly (() => Promise<Recorded>)[];
  readonly cancelledEarly?: boolean;
  readonly leaseLapsing?: boolean;
  readonly modelConfigured?: boolean;
}) => {
  const clock = new ManualClock();
  const happened: string[] = [];
  const recorded: { held: Held; answer?: StoredAnswer; reason?: string; now: number }[] = [];
  const caller = createModelCaller(undefined);
  const model: Model = {
    config: { id: 'm', provider: 'echo', delayMs: 0, timeoutMs: 60_000 },
    provider: {
      generate: async ({ prompt }) => {
        happened.push(`call ${prompt}`);
        return options.generate?.(prompt) ?? { text: prompt.toUpperCase(), finishReason: 'stop' };
      },
    },
  };
  const models: ModelsShape = {
    get: (id) => (id === 'm' && options.modelConfigured !== false ? model : undefined),
    ids: () => ['m'],
  };
  const context = { model: 'm', input: undefined, expiresAt: options.now?.expiresAt ?? clock.now() + 60_000 };
  const store = {
    reads: {
      requestWithText: async () => {
        happened.push('read');
        return { state: { status: 'processing', context }, text: 'hello' };
      },
      request: async () => ({ status: options.now?.status ?? 'processing', context }),
    },
  } as unknown as StoreShape;
  /** How each attempt ended, as the metrics count it. */
  const ended: string[] = [];
  let writes = 0;
  const write = () => {
    const all = options.writes ?? [async () => 'recorded' as const];
    return (all[Math.min(writes++, all.length - 1)] as () => Promise<Recorded>)();
  };
  const queue = {
    recordSuccess: (held: Held, answer: StoredAnswer, now: number) => {
      happened.push('success');
      recorded.push({ held, answer, now });
      return write();
    },
    recordFailure: (held: Held, reason: string, _policy: unknown, now: number) => {
      happened.push(`failure ${reason}`);
      recorded.push({ held, reason, now });
      return write();
    },
    release: async (held: Held) => {
      happened.push(`release ${held.reqId}`);
    },
  } as unknown as WorkQueueShape;
  const committer = {
    send: async (command: { type: string; reqId: string }) => {
      happened.push(`${command.type} ${command.reqId}`);
      return { ok: true };
    },
  } as unknown as CommitterShape;
  const run = createAttemptRunner({
    store,
    queue,
    committer,
    models,
    clock,
    log: silentLogger(),
    owner,
    policy: defaultRetryPolicy,
    caller,
    cancelledEarly: () => options.cancelledEarly === true,
    leaseLapsing: () => options.leaseLapsing === true,
    // The lease keeper gives a lease up exactly when it says it is lapsing.
    leaseGivenUp: () => options.leaseLapsing === true,
    metrics: {
      attemptStarted: () => {},
      queueWaited: () => {},
      attemptEnded: (_model, how) => ended.push(how),
      upstreamCalled: () => {},
    },
    workerFree: () => happened.push('worker free'),
  });
  return { run, happened, recorded, caller, clock, ended };
};

describe('An attempt', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('calls the model once with the stored prompt, lets its worker go as soon as it answers, then records the answer in its owner’s name', async () => {
    const { run, happened, recorded, clock } = runnerOver({});
    await run(attempt, undefined);
    expect(happened).toEqual(['read', 'call hello', 'worker free', 'success']);
    expect(recorded).toEqual([
      {
        held: { reqId: 'req_a', attempt: 2, owner },
        answer: { text: 'HELLO', inputTokens: undefined, outputTokens: undefined, finishReason: undefined },
        now: clock.now(),
      },
    ]);
  });

  it('uses the input a submit that started at once hands over, without reading the store', async () => {
    const { run, happened } = runnerOver({});
    await run({ ...attempt, model: 'm' }, { prompt: 'given' });
    expect(happened).toEqual(['call given', 'worker free', 'success']);
  });

  it('records the model’s failure as the attempt’s, for the queue to retry it or fail it for good', async () => {
    const { run, happened } = runnerOver({ generate: () => Promise.reject(new Error('upstream said no')) });
    await run(attempt, undefined);
    expect(happened).toEqual(['read', 'call hello', 'worker free', 'failure upstream said no']);
  });

  it('never calls the model of a request cancelled while its start was being recorded', async () => {
    const { run, happened } = runnerOver({ cancelledEarly: true });
    await run(attempt, undefined);
    expect(happened).toEqual(['read', 'worker free', 'failure cancelled']);
  });

  it('fails an attempt whose model is no longer configured, without calling a model', async () => {
    const { run, happened } = runnerOver({ modelConfigured: false });
    await run(attempt, undefined);
    expect(happened).toEqual(['read', 'worker free', 'failure model is no longer configured']);
  });

  it('never calls the model once its lease is lapsing, and gives the attempt back instead of failing the request', async () => {
    const { run, happened } = runnerOver({ leaseLapsing: true });
    await run(attempt, undefined);
    expect(happened).toEqual(['read', 'worker free', 'release req_a']);
  });

  it('records nothing when the pool stopped while its model was called: the attempt is given back by the pool', async () => {
    const stopping: { stop?: () => void } = {};
    const runner = runnerOver({
      generate: async (prompt) => {
        stopping.stop?.();
        return { text: prompt, finishReason: 'stop' };
      },
    });
    stopping.stop = () => runner.caller.stop();
    await runner.run(attempt, undefined);
    expect(runner.happened).toEqual(['read', 'call hello', 'worker free']);
  });

  it('writes its outcome again each second while the write fails, until it is written', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const fails = () => Promise.reject(new Error('disk full'));
    const { run, recorded } = runnerOver({ writes: [fails, fails, async () => 'recorded'] });
    let ended = false;
    void run(attempt, undefined).then(() => {
      ended = true;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(recorded).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(999);
    expect(recorded).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(recorded).toHaveLength(2);
    expect(ended).toBe(false);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(recorded).toHaveLength(3);
    expect(ended).toBe(true);
  });

  it('stops writing again an outcome whose write fails once the pool has stopped', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { run, recorded, caller } = runnerOver({ writes: [() => Promise.reject(new Error('disk full'))] });
    const running = run(attempt, undefined);
    await vi.advanceTimersByTimeAsync(0);
    expect(recorded).toHaveLength(1);
    caller.stop();
    await vi.advanceTimersByTimeAsync(1_000);
    await running;
    expect(recorded).toHaveLength(1);
  });

  it('expires a request whose outcome was refused because it expired meanwhile, rather than leave it processing', async () => {
    const clock = new ManualClock();
    const { run, happened, ended } = runnerOver({
      writes: [async () => 'refused'],
      now: { status: 'processing', expiresAt: clock.now() - 1 },
    });
    await run(attempt, undefined);
    expect(happened).toEqual(['read', 'call hello', 'worker free', 'success', 'Expire req_a']);
    expect(ended).toEqual(['expired']);
  });

  it('drops a refused outcome of a request another worker took over, or that was cancelled, expires neither, and counts each for what it was', async () => {
    for (const [status, counted] of [
      ['processing', 'taken_over'],
      ['cancelled', 'cancelled'],
    ]) {
      const { run, happened, ended } = runnerOver({
        writes: [async () => 'refused'],
        now: { status: status as string, expiresAt: Infinity },
      });
      await run(attempt, undefined);
      expect(happened).toEqual(['read', 'call hello', 'worker free', 'success']);
      expect(ended).toEqual([counted]);
    }
  });
});
