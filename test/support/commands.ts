import type { Command } from '../../src/domain/commands.js';
import type { Lease } from '../../src/domain/request/decider.js';

/** A submit of a five-character prompt by acct_1 with key_1, living 60 s: the store tests' usual request. */
export const submitCommand = (reqId: string, now = 1_000, options: { startNow?: Lease } = {}): Command => ({
  type: 'Submit',
  reqId,
  accountId: 'acct_1',
  keyId: 'key_1',
  model: 'echo',
  promptChars: 5,
  prompt: 'hello',
  ttlMs: 60_000,
  now,
  ...options,
});
