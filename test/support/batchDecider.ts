import { decideBatch } from '../../src/domain/batch/decider.js';
import type { BatchEvent } from '../../src/domain/batch/events.js';
import {
  type BatchCounts,
  type BatchState,
  evolveBatch,
  initialBatchState,
  noCounts,
} from '../../src/domain/batch/state.js';
import { Refused } from '../../src/domain/errors.js';

/** A batch's commands decided and folded as the store does them, for the batch machine's unit tests. */

export const batchId = 'batch_0190f2a0b1c2AbCdEfGhIjKlMnOpQrStUv';
export const at = 1_000_000;
export const lease = 30_000;
export const batchAccount = 'acct_aaaaaaaaaaaaaaaa';

export type BatchCommandOf = Parameters<typeof decideBatch>[3];

/** Decides and folds, as the store does; a refusal leaves the state as it was and is returned, with the events. */
export const step = (state: BatchState, command: BatchCommandOf, counts: BatchCounts = noCounts) => {
  const events = decideBatch(batchId, state, counts, command);
  if (events instanceof Refused) return { state, refused: events, events: [] as BatchEvent[] };
  return { state: events.reduce<BatchState>((s, e) => evolveBatch(s, e), state), refused: undefined, events };
};

export const created = () =>
  step(initialBatchState, {
    type: 'CreateBatch',
    accountId: batchAccount,
    keyId: 'key_aaaaaaaaaaaaaaaa',
    endpoint: '/v1/chat/completions',
    inputFileId: 'file-0190f2a0b1c2AbCdEfGhIjKlMnOpQrStUv',
    completionWindow: '24h',
    windowMs: 86_400_000,
    now: at,
  }).state;

export const started = (owner = 'p1', total = 3) => {
  let state = step(created(), { type: 'TakeBatch', owner, leaseMs: lease, now: at + 1 }).state;
  state = step(state, { type: 'StartBatch', owner, total, model: 'echo', now: at + 2 }).state;
  return state;
};
