import { randomBytes } from 'node:crypto';
import { readFileSync, renameSync, type StatWatcher, unwatchFile, watchFile, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StoreNotices } from '../../ports/Store.js';

/** The file beside the data file that an ask rewrites (a new token each time). */
export const reloadAskedFile = 'reload-asked';
/** How often its status is looked at: an ask is heard within this long. */
const pollMs = 250;

const tokenOf = (path: string): string | undefined => {
  try {
    return readFileSync(path, 'utf8').slice(0, 100);
  } catch {
    return undefined;
  }
};

/**
 * Notices on an LMDB data directory: every process using it is on this machine, so an ask is a small file in the
 * directory that each of them watches. Its status is polled (not an inotify watch, which a rename of the file would
 * leave on the old one), and a change of its token is an ask. The file is replaced by a rename, so a reader never sees
 * half of it; it holds nothing but the token.
 */
export const fileNotices = (dataDir: string): StoreNotices => {
  const path = join(dataDir, reloadAskedFile);
  const listeners = new Set<() => void>();
  let seen: string | undefined;
  let watcher: StatWatcher | undefined;
  const changed = () => {
    const token = tokenOf(path);
    if (token === undefined || token === seen) return;
    seen = token;
    for (const listener of [...listeners]) listener();
  };
  return {
    askReload: async () => {
      const temporary = `${path}.${process.pid}.tmp`;
      writeFileSync(temporary, `${Date.now()}-${randomBytes(6).toString('hex')}\n`, { mode: 0o600 });
      renameSync(temporary, path);
    },
    onReloadAsked(listener) {
      if (listeners.size === 0) {
        seen = tokenOf(path);
        watcher = watchFile(path, { interval: pollMs, persistent: false }, changed);
      }
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
        if (listeners.size > 0 || watcher === undefined) return;
        unwatchFile(path, changed);
        watcher = undefined;
      };
    },
  };
};
