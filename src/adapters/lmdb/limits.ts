import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { open } from 'lmdb';
import type { Decision } from '../../domain/rateLimit/gcra.js';
import type { Spend, ThrottleAsk, ThrottleCounter, ThrottlePlace } from '../../ports/Store.js';
import { spendAll } from '../../storage/spend.js';
import {
  forgetThrottleKey,
  maxThrottleKeys,
  pruneThrottleKeys,
  releaseThrottlePlace,
  reserveThrottlePlace,
  scopedKeys,
  type ThrottleEntry,
  type ThrottleExpiryIndex,
  type ThrottleTable,
} from '../../storage/throttleCounts.js';

/**
 * Rate-limiter states, shared by every process on the data directory: an LMDB environment of its own beside the
 * log's, written in one synchronous transaction per call (LMDB's writer lock makes each spend exact across processes)
 * and never flushed to disk (a spend costs about 3 µs instead of the log's durable commit). A process that dies
 * loses nothing (its writes are in the kernel's page cache); a machine that stops may leave the file torn, so the
 * file is named after the boot it belongs to and a new boot starts from a new, empty one: budgets are whole again
 * after a reboot, which is what a restart of an in-memory limiter gave before.
 *
 * The login and signup throttles' counts live here too, with an index by when each key's newest try leaves its
 * window, which pruning reads (`pruneThrottleKeys`): a spray of emails or addresses cannot grow the file without bound.
 */

const bootId = (): string => {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8')
      .trim()
      .replace(/[^A-Za-z0-9-]/g, '');
  } catch {
    // Not Linux: one file for every boot (and no protection against a torn file after a power cut).
    return 'any';
  }
};

const prefix = 'limits-';

/** Removes what earlier boots left (no process of this boot uses them). */
const removeOthers = (dataDir: string, current: string) => {
  for (const name of readdirSync(dataDir)) {
    if (name.startsWith(prefix) && !name.startsWith(current)) rmSync(join(dataDir, name), { force: true });
  }
};

export const openLimits = (dataDir: string, bounds = { maxThrottleKeys }) => {
  const file = `${prefix}${bootId()}.mdb`;
  removeOthers(dataDir, file);
  const root = open({ path: join(dataDir, file), noSync: true, useWritemap: true, maxDbs: 4 });
  const db = root.openDB<number, [string, string]>({ name: 'limits' });
  // The throttle's databases keep their first names on disk (`attempts`): a new name would change the file's layout.
  const throttleKeys = root.openDB<ThrottleEntry, string>({ name: 'attempts' });
  const throttleKeysByExpiry = root.openDB<'', [number, string]>({ name: 'attempts.expiry' });
  const table: ThrottleTable = {
    get: (key) => throttleKeys.get(key),
    put: (key, entry, before) => {
      if (before !== undefined) throttleKeysByExpiry.removeSync([before.expiresAt, key]);
      throttleKeys.putSync(key, entry);
      throttleKeysByExpiry.putSync([entry.expiresAt, key], '');
    },
    remove: (key, before) => {
      throttleKeysByExpiry.removeSync([before.expiresAt, key]);
      throttleKeys.removeSync(key);
    },
  };
  const byExpiry: ThrottleExpiryIndex = {
    size: () => (throttleKeys.getStats() as { entryCount: number }).entryCount,
    soonest: (limit) => throttleKeysByExpiry.getKeys({ limit }),
    drop: (key, expiresAt) => {
      throttleKeysByExpiry.removeSync([expiresAt, key]);
      throttleKeys.removeSync(key);
    },
  };
  const throttle: ThrottleCounter = {
    reserve: async (ask: ThrottleAsk) =>
      root.transactionSync(() => {
        pruneThrottleKeys(byExpiry, ask.now, scopedKeys(ask), bounds.maxThrottleKeys);
        return reserveThrottlePlace(ask, table);
      }),
    release: async (place: ThrottlePlace) => root.transactionSync(() => releaseThrottlePlace(place, table)),
    forget: async (scope: string, key: string) => root.transactionSync(() => forgetThrottleKey(scope, key, table)),
  };
  const state = {
    get: (accountId: string, budget: string) => db.get([accountId, budget]),
    put: (accountId: string, budget: string, tat: number) => void db.putSync([accountId, budget], tat),
  };
  return {
    spend: (spends: readonly Spend[]): Decision[] => root.transactionSync(() => spendAll(spends, state)),
    throttle,
    /** Throttle keys kept now (what the bound and the pruning are about). */
    throttleKeyCount: () => (throttleKeys.getStats() as { entryCount: number }).entryCount,
    state: (accountId: string, budget: string): number | undefined => {
      root.resetReadTxn();
      return db.get([accountId, budget]);
    },
    close: () => root.close(),
  };
};
