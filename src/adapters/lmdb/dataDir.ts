import { mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** The data directory cannot be used: it is a file, under a file, or cannot be created. */
export class DataDirUnusable extends Error {
  // Recognised by name, so that the CLI can tell it apart without loading the store.
  override name = 'DataDirUnusable';
}

const codeOf = (error: unknown) => (error as NodeJS.ErrnoException).code ?? String(error);

/**
 * Makes sure `dataDir` is a directory, creating it and its missing parents one by one. (Node's own recursive
 * `mkdir` spins forever under `/proc`, and its errors name neither the setting nor what to do.)
 */
export const ensureDataDir = (dataDir: string): void => {
  const wanted = resolve(dataDir);
  const missing: string[] = [];
  let at = wanted;
  for (;;) {
    let isDirectory: boolean;
    try {
      isDirectory = statSync(at).isDirectory();
    } catch (error) {
      if ((codeOf(error) !== 'ENOENT' && codeOf(error) !== 'ENOTDIR') || dirname(at) === at)
        throw new DataDirUnusable(`the data directory ${dataDir} cannot be used: ${at} (${codeOf(error)})`);
      missing.unshift(at);
      at = dirname(at);
      continue;
    }
    if (!isDirectory)
      throw new DataDirUnusable(
        `the data directory ${dataDir} cannot be used: ${at} is a file, not a directory; set AIRS_DATA_DIR or dataDir to a directory`,
      );
    break;
  }
  for (const dir of missing) {
    try {
      mkdirSync(dir);
    } catch (error) {
      if (codeOf(error) === 'EEXIST' && statSync(dir).isDirectory()) continue;
      throw new DataDirUnusable(`the data directory ${dataDir} cannot be created: ${dir} (${codeOf(error)})`);
    }
  }
};
