import { linkSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDataDir } from '../lmdb/dataDir.js';
import { privateFileMode } from '../lmdb/fileModes.js';

/**
 * One `airs serve` per data directory. Two servers on one directory would each start every queued request (a model
 * called twice) and each grant an account its own rate limit. LMDB lets many processes open an environment (the CLI
 * relies on that), so the server holds a lock of its own: a file with its pid, linked into place only if no such file exists. A file left by
 * a process that is gone (killed, power cut) is taken over; the pid is checked, not the file's age.
 */

export const serveLockFile = (dataDir: string) => join(dataDir, 'airs.serve.pid');

/** Another live process holds the directory. */
export class DataDirInUse extends Error {
  constructor(
    readonly dataDir: string,
    readonly holder: number,
  ) {
    super(
      `the data directory ${dataDir} is already served by process ${holder} (lock file ${serveLockFile(dataDir)}); stop that server first, or remove the file if no airs serve runs there`,
    );
  }
}

const holderOf = (path: string): number | undefined => {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
};

/** Whether `pid` is a running process (a zombie, killed but not yet reaped, is not). */
const isRunning = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return true;
  }
};

export type ServeLock = { release(): void };

/** Takes the directory's lock for this process, or throws `DataDirInUse` naming the holder. */
export const takeServeLock = (dataDir: string): ServeLock => {
  ensureDataDir(dataDir);
  const path = serveLockFile(dataDir);
  // Written whole first, then linked into place (atomic, and refused if the lock exists): nobody ever reads a lock
  // file half written.
  const mine = `${path}.${process.pid}`;
  writeFileSync(mine, `${process.pid}\n`, { mode: privateFileMode });
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        linkSync(mine, path);
        return {
          release: () => {
            if (holderOf(path) === process.pid) unlinkSync(path);
          },
        };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        const holder = holderOf(path);
        // Our own pid in the file is a server before a restart that got the same pid (containers often do).
        if (holder !== undefined && holder !== process.pid && isRunning(holder))
          throw new DataDirInUse(dataDir, holder);
        // Left by a server that is gone (killed, power cut), or unreadable: nothing serves under it.
        try {
          unlinkSync(path);
        } catch (unlinkError) {
          if ((unlinkError as NodeJS.ErrnoException).code !== 'ENOENT') throw unlinkError;
        }
      }
    }
    throw new DataDirInUse(dataDir, holderOf(path) ?? 0);
  } finally {
    unlinkSync(mine);
  }
};
