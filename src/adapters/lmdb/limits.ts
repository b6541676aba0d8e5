import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { open } from 'lmdb';
import type { Decision } from '../../domain/rateLimit/gcra.js';
import type { Spend } from '../../ports/Store.js';
import { spendAll } from '../../storage/spend.js';

/**
 * Rate-limiter states, shared by every process on the data directory: an LMDB environment of its own beside the
 * log's, written in one synchronous transaction per call (LMDB's writer lock makes each spend exact across processes)
 * and never flushed to disk (a spend costs about 3 µs instead of the log's durable commit). A process that dies
 * loses nothing (its writes are in the kernel's page cache); a machine that stops may leave the file torn, so the
 * file is named after the boot it belongs to and a new boot starts from a new, empty one: budgets are whole again
 * after a reboot, which is what a restart of an in-memory limiter gave before.
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

export const openLimits = (dataDir: string) => {
  const file = `${prefix}${bootId()}.mdb`;
  removeOthers(dataDir, file);
  const root = open({ path: join(dataDir, file), noSync: true, useWritemap: true, maxDbs: 2 });
  const db = root.openDB<number, [string, string]>({ name: 'limits' });
  const state = {
    get: (accountId: string, budget: string) => db.get([accountId, budget]),
    put: (accountId: string, budget: string, tat: number) => void db.putSync([accountId, budget], tat),
  };
  return {
    spend: (spends: readonly Spend[]): Decision[] => root.transactionSync(() => spendAll(spends, state)),
    state: (accountId: string, budget: string): number | undefined => {
      root.resetReadTxn();
      return db.get([accountId, budget]);
    },
    close: () => root.close(),
  };
};
