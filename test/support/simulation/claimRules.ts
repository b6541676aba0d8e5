import type { MemoryStore } from '../../../src/adapters/memory/MemoryStore.js';
import { effectiveLimits } from '../../../src/domain/account/limits.js';
import type { Claim } from '../../../src/domain/claim.js';
import type { Command } from '../../../src/domain/commands.js';
import type { PlanTable } from '../../../src/domain/plans.js';
import type { RequestState } from '../../../src/domain/request/state.js';
import type { StoreShape } from '../../../src/ports/Store.js';

type Snapshot = ReadonlyMap<string, RequestState>;

/**
 * The memory store of a simulation, with contract 18's rules checked on every command it decides:
 * - no account ever has more requests being processed than its plan's `maxProcessing`, in all processes together;
 * - no claim starts a request for an account that holds more than its share of the model's workers once it has
 *   started it, while another account's request of that model was due and left waiting, that account being below
 *   its own bound and below its share: the worker should have gone to the other account (a flex request waits for
 *   priority and default work by right, contract 20).
 * A batch is applied one command at a time, synchronously (as the memory store decides a batch: its outcomes equal
 * those of its commands one by one, which test/adapters/lmdb/batchEquivalence.property.test.ts holds), so that each
 * claim is seen with the state it was decided against.
 */
export const checkingClaimRules = (store: MemoryStore, plans: PlanTable) => {
  const violations: string[] = [];
  const reqIds = new Set<string>();
  const snapshot = (): Snapshot => {
    const states = new Map<string, RequestState>();
    for (const reqId of reqIds) {
      const state = store.syncReads.request(reqId);
      if (state !== undefined) states.set(reqId, state);
    }
    return states;
  };
  const held = (states: Snapshot, accountId: string, model?: string) => {
    let count = 0;
    for (const { status, context } of states.values())
      if (
        status === 'processing' &&
        context.accountId === accountId &&
        (model === undefined || context.model === model)
      )
        count++;
    return count;
  };
  const boundOf = (accountId: string) => {
    const account = store.syncReads.account(accountId);
    return account === undefined
      ? Number.POSITIVE_INFINITY
      : (effectiveLimits(plans, account).maxProcessing ?? Number.POSITIVE_INFINITY);
  };

  const checkBounds = (states: Snapshot, after: Command) => {
    for (const accountId of new Set([...states.values()].map((state) => state.context.accountId)))
      if (held(states, accountId) > boundOf(accountId))
        violations.push(`${accountId} has ${held(states, accountId)} requests being processed after ${after.type}`);
  };

  const checkShare = (claim: Claim, before: Snapshot, after: Snapshot) => {
    const { accountShare } = claim;
    if (accountShare === undefined) return;
    const shareOf = (model: string) =>
      Math.max(1, Math.floor(accountShare * (claim.modelLimits[model] ?? claim.workers ?? claim.max)));
    const started = [...after.values()].filter(
      (state) => state.status === 'processing' && before.get(state.context.reqId)?.status === 'waiting',
    );
    for (const { context } of started) {
      const { accountId, model } = context;
      if (held(after, accountId, model) <= shareOf(model)) continue;
      const passedOver = [...before.values()].filter(
        (state) =>
          state.status === 'waiting' &&
          state.context.model === model &&
          state.context.accountId !== accountId &&
          // Flex work waits for priority and default work whatever the shares (contract 20): it is passed over by
          // right, unless the request started was flex too.
          (state.context.serviceTier !== 'flex' || context.serviceTier === 'flex') &&
          state.context.availableAt <= claim.now &&
          after.get(state.context.reqId)?.status === 'waiting' &&
          held(after, state.context.accountId) < boundOf(state.context.accountId) &&
          held(after, state.context.accountId, model) < shareOf(model),
      );
      if (passedOver.length > 0)
        violations.push(
          `${accountId} took ${context.reqId} holding more than its share (${shareOf(model)}) of ${model} while ${passedOver.map((s) => s.context.reqId).join(', ')} waited`,
        );
    }
  };

  const commit: StoreShape['commit'] = (batch) => {
    const outcomes = batch.commands.map((command, index) => {
      const before = command.type === 'Claim' ? snapshot() : undefined;
      // The memory store decides and applies a commit synchronously, before its promise is awaited.
      const outcome = store.commit({ commands: [command], keyUses: index === 0 ? batch.keyUses : undefined });
      if (command.type === 'Submit') reqIds.add(command.reqId);
      // Only these start work: the others can only lower a count.
      if (command.type !== 'Claim' && command.type !== 'Submit' && command.type !== 'StartAttempt') return outcome;
      const after = snapshot();
      if (before !== undefined && command.type === 'Claim') checkShare(command, before, after);
      checkBounds(after, command);
      return outcome;
    });
    return Promise.all(outcomes).then((each) => each.flat());
  };

  return { store: { ...store, commit }, violations };
};
