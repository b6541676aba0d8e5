import { describe, expect, it } from 'vitest';
import { createHashingGate, isHashingBusy } from '../../src/app/PasswordHashing.js';

/** A task that runs until the test finishes it, noting when it started. */
const tasks = () => {
  const started: number[] = [];
  const finish = new Map<number, () => void>();
  const task = (id: number) => () =>
    new Promise<number>((resolve) => {
      started.push(id);
      finish.set(id, () => resolve(id));
    });
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  return { started, task, done: (id: number) => finish.get(id)?.(), settle };
};

describe('The password-hashing gate', () => {
  it('runs at most `concurrency` at once, queues `queue` more in order of arrival, and refuses the rest at once', async () => {
    const gate = createHashingGate({ concurrency: 2, queue: 2 });
    const { started, task, done, settle } = tasks();
    const results = [1, 2, 3, 4, 5, 6].map((id) => gate.run(task(id), true));
    await settle();
    expect(started).toEqual([1, 2]);
    expect(gate.load()).toEqual({ running: 2, waiting: 2 });
    expect(isHashingBusy(await results[4])).toBe(true);
    expect(isHashingBusy(await results[5])).toBe(true);
    done(2);
    await settle();
    expect(started).toEqual([1, 2, 3]);
    for (const id of [1, 3]) done(id);
    await settle();
    expect(started).toEqual([1, 2, 3, 4]);
    done(4);
    expect(await Promise.all(results.slice(0, 4))).toEqual([1, 2, 3, 4]);
    expect(gate.load()).toEqual({ running: 0, waiting: 0 });
  });

  it('lets a caller that may wait (the operator’s set-password) queue beyond the bound, and frees the slot of a task that fails', async () => {
    const gate = createHashingGate({ concurrency: 1, queue: 0 });
    const { started, task, done, settle } = tasks();
    const first = gate.run(task(1), true);
    const patient = gate.run(task(2), false);
    expect(isHashingBusy(await gate.run(task(3), true))).toBe(true);
    done(1);
    await settle();
    expect(started).toEqual([1, 2]);
    done(2);
    expect([await first, await patient]).toEqual([1, 2]);
    await expect(gate.run(() => Promise.reject(new Error('scrypt failed')), true)).rejects.toThrow('scrypt failed');
    expect(gate.load()).toEqual({ running: 0, waiting: 0 });
  });
});
