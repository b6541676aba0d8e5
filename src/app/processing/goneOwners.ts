import * as Context from 'effect/Context';
import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import type { Logger } from 'pino';
import { type Command, isRefusal } from '../../domain/commands.js';
import { AppClock } from '../../ports/Clock.js';
import { Log } from '../../ports/Logger.js';
import { type CommandOutcome, StorageFault, Store, type StoreShape } from '../../ports/Store.js';
import { Committer } from '../Committer.js';

/** What a look took up: leases ended because their processes are gone. */
export type TakenUp = { readonly requests: number; readonly batches: number };

export interface GoneOwnersShape {
  /**
   * Ends now the leases (requests' attempts, batches' housekeeping) held by processes known to be gone, so that they
   * are taken up at once rather than when they lapse. Run at start and whenever a sibling process is seen to die.
   */
  takeUp(): Promise<TakenUp>;
}

export class GoneOwners extends Context.Service<GoneOwners, GoneOwnersShape>()('airs/GoneOwners') {}

/** Requests being processed a look reads at most (all processes' workers together hold far fewer). */
const requestScan = 100_000;
/** Open batches a look reads at most (as the batch runner's tick). */
const batchScan = 1_000;

/**
 * Reads the leases that run now and, for each whose owner the store says is gone (`StoreShape.owners`: LMDB, one
 * machine), sends the command that ends it: `OwnerGone`, decided by the request's machine (only the current attempt,
 * only while its lease runs) or the batch's. The request is then a lapsed lease like any other: the next claim of any
 * process takes it over with its next attempt, or fails it when no attempt is left. A store without owners (PostgreSQL:
 * other machines) takes nothing up; its leases lapse. A read that is stale by the time it is written is harmless: the
 * machine refuses a notice for an attempt that is no longer current.
 */
export const createGoneOwners = (deps: {
  readonly store: StoreShape;
  readonly send: (command: Command) => Promise<CommandOutcome | Error>;
  readonly now: () => number;
  readonly log: Logger;
}): GoneOwnersShape => ({
  takeUp: async () => {
    const { store } = deps;
    const owners = store.owners;
    if (owners === undefined) return { requests: 0, batches: 0 };
    const verdicts = new Map<string, boolean>();
    const gone = (owner: string) => {
      let verdict = verdicts.get(owner);
      if (verdict === undefined) {
        verdict = owners.gone(owner);
        verdicts.set(owner, verdict);
      }
      return verdict;
    };
    const now = deps.now();
    const requests: Command[] = [];
    for (const reqId of await store.reads.processing(requestScan)) {
      const state = await store.reads.request(reqId);
      if (state === undefined || state.status !== 'processing') continue;
      const { owner, leaseUntil, attempts } = state.context;
      if (owner === undefined || (leaseUntil ?? 0) <= now || !gone(owner)) continue;
      requests.push({ type: 'OwnerGone', reqId, owner, attempt: attempts, now });
    }
    const batches: Command[] = [];
    for (const { batchId } of await store.reads.openBatches(batchScan)) {
      const context = (await store.reads.batch(batchId))?.state.context;
      if (context?.owner === undefined || (context.leaseUntil ?? 0) <= now || !gone(context.owner)) continue;
      batches.push({ type: 'Batch', batchId, command: { type: 'OwnerGone', owner: context.owner, now } });
    }
    if (requests.length + batches.length === 0) return { requests: 0, batches: 0 };
    // Sent in one turn: one batch of the committer, one durable write.
    const outcomes = await Promise.all([...requests, ...batches].map((command) => deps.send(command)));
    const ended = (from: number, to: number) =>
      outcomes.slice(from, to).filter((outcome) => !isRefusal(outcome) && !(outcome instanceof Error)).length;
    const taken = { requests: ended(0, requests.length), batches: ended(requests.length, outcomes.length) };
    const failed = outcomes.find((outcome) => outcome instanceof Error && !isRefusal(outcome));
    if (failed !== undefined) throw failed;
    const goneOwners = [...verdicts].flatMap(([owner, verdict]) => (verdict ? [owner] : []));
    deps.log.info({ ...taken, owners: goneOwners }, 'took up the leases of processes that no longer exist');
    return taken;
  },
});

/**
 * Built before the worker pool and the batch runner: what dead processes held is freed before they first look at the
 * store, so a restarted server starts its predecessor's work as soon as it runs.
 */
export const GoneOwnersLayer = Layer.effect(
  GoneOwners,
  Effect.gen(function* () {
    const committer = yield* Committer;
    const clock = yield* AppClock;
    const log = yield* Log;
    const goneOwners = createGoneOwners({
      store: yield* Store,
      send: (command) => committer.send(command),
      now: () => clock.now(),
      log,
    });
    const takeUp = () =>
      goneOwners.takeUp().catch((error: unknown): TakenUp => {
        // Not written: those leases lapse as they would have, and the next look tries again.
        if (error instanceof StorageFault) log.warn({ reason: error.message }, 'could not take up dead leases');
        else log.error({ err: error }, 'taking up dead leases failed');
        return { requests: 0, batches: 0 };
      });
    yield* Effect.promise(takeUp);
    return GoneOwners.of({ takeUp });
  }),
);
