import * as Context from 'effect/Context';
import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import * as Option from 'effect/Option';
import * as Schedule from 'effect/Schedule';
import type { Logger } from 'pino';
import { Unavailable } from '../domain/errors.js';
import { AppClock, type ClockShape } from '../ports/Clock.js';
import { Log } from '../ports/Logger.js';
import { type StorageFault, Store, StoreUnreachable } from '../ports/Store.js';

/**
 * Whether the data directory can take new work: its writes succeed, and its disk has room above the floor.
 * New submits are refused (503) while it cannot; work already acknowledged goes on, and polls read as before.
 */
export interface StorageHealthShape {
  /** Why a new submit is refused right now, if it is (the free-space floor). */
  refusal(): Unavailable | undefined;
  /** A batch failed for a reason of the disk (StorageFault). */
  writeFailed(reason: string): void;
  /** The store could not be reached (StoreUnreachable: a database server refused or lost the connection). */
  unreachable(reason: string): void;
  /** A batch holding `bytes` of text was committed. Called once per batch: cheap while nothing is wrong. */
  writeSucceeded(bytes: number): void;
  /** `bytes` were written beside the log (an upload's parts): counted against the free space as committed text is. */
  wrote(bytes: number): void;
  /** Reads the disk's free space now (the watch does it every second, and soon after writes). */
  check(): Promise<void>;
  /** Asks the store whether it can be reached (the watch does it every second where the store has a `ping`). */
  ping(): Promise<void>;
  /** What is wrong now, in a sentence, or undefined (for readiness and the log). */
  problem(): string | undefined;
}

export class StorageHealth extends Context.Service<StorageHealth, StorageHealthShape>()('airs/StorageHealth') {}

/** What a client is told to wait: a full disk needs an operator, so a quick retry would only spend its budget. */
export const storageRetryAfterSeconds = 30;

/** What a client is told to wait when the database cannot be reached: it reconnects by itself, often in seconds. */
export const unreachableRetryAfterSeconds = 5;

/** A database that cannot be reached is asked again this often (the readiness probe follows it). */
export const pingIntervalMs = 1_000;

/** A disk that cannot take writes is the service being unavailable, not an internal error: the client may retry. */
const diskUnavailable = new Unavailable({
  message: 'the service cannot write to its disk right now and accepts no new requests; retry later',
  retryAfterSeconds: storageRetryAfterSeconds,
});

const databaseUnreachable = new Unavailable({
  message: 'the service cannot reach its database right now; retry shortly',
  retryAfterSeconds: unreachableRetryAfterSeconds,
});

/** The answer to a call that met a fault of the store: 503 with Retry-After, never the fault's own text. */
export const unavailableFor = (fault: StorageFault): Unavailable =>
  fault instanceof StoreUnreachable ? databaseUnreachable : diskUnavailable;

/** After writes, the free space is read again once this long has passed since the last reading. */
const rereadAfterWritesMs = 100;

const mib = (bytes: number) => `${Math.floor(bytes / (1024 * 1024))} MiB`;

export type StorageHealthOptions = {
  /** Submits are refused while the disk has less free space than this; 0: no floor, no readings. */
  readonly minFreeBytes: number;
  /** The free space of the data directory's disk (statfs in the live service). */
  readonly readFreeBytes: () => Promise<number>;
  /** One round trip to a store on another machine (`StoreShape.ping`): with it, its reachability is watched. */
  readonly ping?: (() => Promise<void>) | undefined;
  /** With a store that has a `ping`: ask it every second (a server's readiness; a CLI command does not). */
  readonly watchStore?: boolean;
};

export const createStorageHealth = (
  options: StorageHealthOptions,
  log: Logger,
  clock: ClockShape,
): StorageHealthShape => {
  const { minFreeBytes } = options;
  let failingSince: number | undefined;
  let failingReason = '';
  /** The last reading, and the text committed since: between readings, free space is taken to shrink by that much
   * (LMDB writes more than the text, so the next reading corrects it), so a burst cannot run far past the floor. */
  let lastFree = Number.POSITIVE_INFINITY;
  let writtenSince = 0;
  let lastReadAt = Number.NEGATIVE_INFINITY;
  let reading: Promise<void> | undefined;
  let lowSpace: Unavailable | undefined;
  let unreachableSince: number | undefined;
  let unreachableReason = '';
  let pinging: Promise<void> | undefined;

  const unreachable = (reason: string) => {
    if (unreachableSince === undefined) {
      unreachableSince = clock.now();
      log.error(
        { reason },
        'the database cannot be reached: calls that need it answer 503 and /readyz is not ready until it is back',
      );
    }
    unreachableReason = reason;
  };
  const reachable = () => {
    if (unreachableSince === undefined) return;
    log.warn({ unreachableForMs: clock.now() - unreachableSince }, 'the database can be reached again');
    unreachableSince = undefined;
  };

  const judge = () => {
    const free = lastFree - writtenSince;
    const low = minFreeBytes > 0 && free < minFreeBytes;
    if (low && lowSpace === undefined) {
      log.error(
        { freeBytes: free, minFreeBytes },
        `the data directory's disk has ${mib(free)} free, less than storage.minFreeMegabytes (${mib(minFreeBytes)}): new submits answer 503 until space is freed`,
      );
      lowSpace = new Unavailable({
        message: 'the service is low on disk space and accepts no new requests for now; retry later',
        retryAfterSeconds: storageRetryAfterSeconds,
      });
    } else if (!low && lowSpace !== undefined) {
      log.warn({ freeBytes: free, minFreeBytes }, "the data directory's disk has room again: submits are accepted");
      lowSpace = undefined;
    }
  };

  const check = () => {
    if (minFreeBytes === 0) return Promise.resolve();
    if (reading !== undefined) return reading;
    lastReadAt = clock.now();
    const since = writtenSince;
    reading = options
      .readFreeBytes()
      .then(
        (free) => {
          lastFree = free;
          // What was committed while the reading was made may or may not be in it: count it as not, to be safe.
          writtenSince -= since;
          judge();
        },
        (error: unknown) => log.warn({ err: error }, 'cannot read the free space of the data directory'),
      )
      .finally(() => {
        reading = undefined;
      });
    return reading;
  };

  /** What was written since the last reading, taken off the free space (the next reading corrects it). */
  const counted = (bytes: number) => {
    if (minFreeBytes === 0 || bytes === 0) return;
    writtenSince += bytes;
    judge();
    if (clock.now() - lastReadAt >= rereadAfterWritesMs) void check();
  };

  const ping = () => {
    if (options.ping === undefined) return Promise.resolve();
    pinging ??= options
      .ping()
      .then(reachable, (error: unknown) =>
        error instanceof StoreUnreachable
          ? unreachable(error.message)
          : log.warn({ err: error }, 'the readiness check of the database failed'),
      )
      .finally(() => {
        pinging = undefined;
      });
    return pinging;
  };

  return {
    refusal: () => lowSpace,
    unreachable,
    ping,
    writeFailed: (reason) => {
      if (failingSince === undefined) {
        failingSince = clock.now();
        log.error(
          { reason },
          'writes to the data directory fail: new submits answer 503 until a write succeeds again (polls still answer)',
        );
      }
      failingReason = reason;
    },
    writeSucceeded: (bytes) => {
      reachable();
      if (failingSince !== undefined) {
        log.warn({ failedForMs: clock.now() - failingSince }, 'writes to the data directory succeed again');
        failingSince = undefined;
      }
      counted(bytes);
    },
    wrote: (bytes) => counted(bytes),
    check,
    problem: () => {
      if (unreachableSince !== undefined) return `the database cannot be reached (${unreachableReason})`;
      if (failingSince !== undefined) return `writes to the data directory fail (${failingReason})`;
      if (lowSpace !== undefined) return "the data directory's disk is below its free-space floor";
      return undefined;
    },
  };
};

/** The health of the data directory, with a watch that reads its disk's free space every second (and once before
 * the service starts) where a floor is set. */
export const StorageHealthLayer = (options: StorageHealthOptions) =>
  Layer.effect(
    StorageHealth,
    Effect.gen(function* () {
      const store = Option.getOrUndefined(yield* Effect.serviceOption(Store));
      const health = createStorageHealth({ ping: store?.ping, ...options }, yield* Log, yield* AppClock);
      // Each watch is a fiber of the layer's scope on Effect's clock, as the sweeper is; neither check ever fails.
      if (options.watchStore === true && store?.ping !== undefined)
        yield* Effect.forkScoped(Effect.schedule(Effect.promise(health.ping), Schedule.fixed(pingIntervalMs)));
      if (options.minFreeBytes === 0) return StorageHealth.of(health);
      yield* Effect.promise(health.check);
      yield* Effect.forkScoped(Effect.schedule(Effect.promise(health.check), Schedule.fixed(1_000)));
      return StorageHealth.of(health);
    }),
  );
