import { mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { privateDirMode } from './fileModes.js';

/** The data directory cannot be used: it is a file, under a file, or cannot be created. */
export class DataDirUnusable extends Error {
  // Recognised by name, so that the CLI can tell it apart without loading the store (and name the setting).
  override name = 'DataDirUnusable';
  constructor(
    message: string,
    readonly dataDir: string,
    /** It, or a directory above it, is a file: the setting is most likely wrong. */
    readonly isFile: boolean,
  ) {
    super(message);
  }
}

/** A directory that cannot be made: `at` is the path that failed, `reason` an errno name; `creating`: its mkdir
 * failed (else looking at it did, or it is a file: `isFile`). */
export class CannotMakeDirectory extends Error {
  constructor(
    readonly at: string,
    readonly reason: string,
    readonly creating = false,
    readonly isFile = false,
  ) {
    super(isFile ? `${at} is a file, not a directory` : `${at} (${reason})`);
  }
}

const codeOf = (error: unknown) => (error as NodeJS.ErrnoException).code ?? String(error);

/**
 * Makes sure `dir` is a directory, creating it and its missing parents one by one, each private to its owner
 * (0700); returns those it created, outermost first. Throws `CannotMakeDirectory`. (Node's own recursive `mkdir`
 * spins forever under `/proc`, and its errors name neither the setting nor what to do.)
 */
export const makeDirectories = (dir: string): string[] => {
  const missing: string[] = [];
  let at = resolve(dir);
  for (;;) {
    let isDirectory: boolean;
    try {
      isDirectory = statSync(at).isDirectory();
    } catch (error) {
      if ((codeOf(error) !== 'ENOENT' && codeOf(error) !== 'ENOTDIR') || dirname(at) === at)
        throw new CannotMakeDirectory(at, codeOf(error));
      missing.unshift(at);
      at = dirname(at);
      continue;
    }
    if (!isDirectory) throw new CannotMakeDirectory(at, 'ENOTDIR', false, true);
    break;
  }
  const created: string[] = [];
  for (const path of missing) {
    try {
      mkdirSync(path, { mode: privateDirMode });
      created.push(path);
    } catch (error) {
      if (codeOf(error) === 'EEXIST' && statSync(path).isDirectory()) continue;
      throw new CannotMakeDirectory(path, codeOf(error), true);
    }
  }
  return created;
};

/** Makes sure `dataDir` is a directory (see `makeDirectories`); returns the directories it created. */
export const ensureDataDir = (dataDir: string): string[] => {
  try {
    return makeDirectories(dataDir);
  } catch (error) {
    if (!(error instanceof CannotMakeDirectory)) throw error;
    throw new DataDirUnusable(
      `the data directory ${dataDir} cannot be ${error.creating ? 'created' : 'used'}: ${error.message}`,
      dataDir,
      error.isFile,
    );
  }
};
