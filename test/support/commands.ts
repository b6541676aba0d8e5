import type { Command } from '../../src/domain/commands.js';
import type { Lease } from '../../src/domain/request/decider.js';

/** What a store test may change of its usual submit. */
export type SubmitCommandOptions = {
  readonly startNow?: Lease;
  readonly accountId?: string;
  readonly prompt?: string;
  readonly ttlMs?: number;
};

/** A submit of a prompt ("hello" unless given) by acct_1 with key_1, living 60 s: the store tests' usual request. */
export const submitCommand = (reqId: string, now = 1_000, options: SubmitCommandOptions = {}): Command => {
  const { accountId = 'acct_1', prompt = 'hello', ttlMs = 60_000, ...rest } = options;
  return {
    type: 'Submit',
    reqId,
    accountId,
    keyId: 'key_1',
    model: 'echo',
    promptChars: prompt.length,
    prompt,
    ttlMs,
    now,
    ...rest,
  };
};
