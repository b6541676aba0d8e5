import { lstatSync, readdirSync, statSync } from 'node:fs';

/**
 * The data directory and its backups hold password hashes, emails, prompts and responses: only their owner may read
 * them. airs makes their directories 0700 and their files 0600 whatever the umask: it narrows the process's umask at
 * start (LMDB creates its files with 0664 less the umask and takes no mode of its own), and names the mode where it
 * creates a file or directory itself. It never changes the modes of what already exists: a directory left wider is
 * the operator's to fix, and each command that uses it says so (`openToOthers`).
 */

export const privateDirMode = 0o700;
export const privateFileMode = 0o600;
const othersBits = 0o077;

/** Every file and directory this process creates from now on is its owner's alone (call once, at start). */
export const keepNewFilesPrivate = (): void => {
  process.umask(othersBits);
};

const octal = (mode: number) => (mode & 0o777).toString(8);

/** A path as a shell reads it: as it is when it holds nothing special, else in single quotes. */
const shellWord = (path: string) => (/^[\w./@%+=:,-]+$/.test(path) ? path : `'${path.replaceAll("'", `'\\''`)}'`);

/**
 * One line for the operator if `dir` or a file in it grants anything to others than its owner (group or others
 * bits), naming the directory and the chmod that fixes it; undefined if none does, or if `dir` does not exist.
 */
export const openToOthers = (dir: string, what = 'the data directory'): string | undefined => {
  const wide: string[] = [];
  try {
    // The directory itself through a link (a data directory may be one), its entries not.
    const mode = statSync(dir).mode;
    if ((mode & othersBits) !== 0) wide.push(`the directory ${octal(mode)}`);
    for (const name of readdirSync(dir)) {
      const stats = lstatSync(`${dir}/${name}`, { throwIfNoEntry: false });
      // A link's own mode means nothing; what it points to is not the data directory's.
      if (stats === undefined || stats.isSymbolicLink()) continue;
      if ((stats.mode & othersBits) !== 0) wide.push(`${name} ${octal(stats.mode)}`);
    }
  } catch {
    return undefined;
  }
  if (wide.length === 0) return undefined;
  const shown = wide.length > 4 ? [...wide.slice(0, 3), `${wide.length - 3} more`] : wide;
  return `warning: ${what} ${dir} is open to other users of this machine (${shown.join(', ')}); it holds password hashes, emails, prompts and responses: run chmod -R go-rwx ${shellWord(dir)}`;
};
