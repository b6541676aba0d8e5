import * as Context from 'effect/Context';
import * as Layer from 'effect/Layer';
import { hashPassword, verifyPassword } from './passwords.js';

/**
 * Password hashing behind a gate: at most `concurrency` hashes at once, at most `queue` waiting for a slot; anyone
 * beyond is told at once that hashing is busy (a `429` page), rather than queued without end.
 *
 * Why: scrypt runs on libuv's thread pool (4 threads by default), which LMDB's commits and fs calls use as well. A
 * flood of logins or signups that filled every thread made the API's submits wait seconds for their commit. With two
 * slots of four, the store always finds a thread (see docs/decisions.md for the figures). A plain counter and queue:
 * the callers are promises on the hot path of a page, and a refusal must be immediate, not an interruption.
 */
export type HashingLimits = { readonly concurrency: number; readonly queue: number };

/** Every hashing slot and every place in its queue is taken: try again in a moment. */
export type HashingBusy = { readonly busy: true };
const busy: HashingBusy = { busy: true };

export const isHashingBusy = (value: unknown): value is HashingBusy =>
  typeof value === 'object' && value !== null && 'busy' in value;

export const createHashingGate = (limits: HashingLimits) => {
  let running = 0;
  /** Callers waiting for a slot, in order of arrival; a finishing hash hands its slot to the first. */
  const waiting: (() => void)[] = [];
  const finished = () => {
    const next = waiting.shift();
    if (next === undefined) running--;
    else next();
  };
  /** Runs `task` in a slot; `bounded`: refused when the queue is full (otherwise waits its turn however long). */
  const run = async <A>(task: () => Promise<A>, bounded: boolean): Promise<A | HashingBusy> => {
    if (running < limits.concurrency) running++;
    else if (bounded && waiting.length >= limits.queue) return busy;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await task();
    } finally {
      finished();
    }
  };
  return {
    run,
    /** Hashes in progress and waiting, for tests and logs. */
    load: () => ({ running, waiting: waiting.length }),
  };
};

export interface PasswordHashingShape {
  /** A password's hash for the store, or busy (a visitor's signup: refused rather than queued without end). */
  hash(password: string): Promise<string | HashingBusy>;
  /** A password's hash, waiting for its turn however long (the operator's `airs accounts set-password`). */
  hashInTurn(password: string): Promise<string>;
  /** Whether `password` made `stored`, or busy. */
  verify(password: string, stored: string): Promise<boolean | HashingBusy>;
}

export class PasswordHashing extends Context.Service<PasswordHashing, PasswordHashingShape>()('airs/PasswordHashing') {}

export const createPasswordHashing = (limits: HashingLimits): PasswordHashingShape => {
  const gate = createHashingGate(limits);
  return {
    hash: (password) => gate.run(() => hashPassword(password), true),
    hashInTurn: (password) => gate.run(() => hashPassword(password), false) as Promise<string>,
    verify: (password, stored) => gate.run(() => verifyPassword(password, stored), true),
  };
};

export const PasswordHashingLayer = (limits: HashingLimits) =>
  Layer.sync(PasswordHashing, () => createPasswordHashing(limits));
