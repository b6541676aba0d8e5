/** Where things are: the checkout, the airs under test (its built CLI and store), the built bench scripts. */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

const findRoot = (from: string): string => {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
};

export const root = findRoot(here);

/** The checkout whose built airs is measured: this one, or another revision's build (`--airs-root`, `--against`). */
let airsRootDir = root;
export const airsRoot = () => airsRootDir;
export const setAirsRoot = (dir: string) => {
  airsRootDir = dir;
};
/** The `airs` command as users run it (`bin` of package.json), of the airs under test. */
export const airsBin = () => join(airsRootDir, 'dist', 'src', 'adapters', 'cli', 'bin.js');
/** A built module of the airs under test, e.g. `airsModule('adapters/lmdb/LmdbStore')`, as a URL to import. */
export const airsModule = (path: string) => pathToFileURL(join(airsRootDir, 'dist', 'src', `${path}.js`)).href;
/** A compiled bench script next to this one, e.g. `script('loadgen')`. */
export const script = (name: string) => join(here, `${name}.js`);
