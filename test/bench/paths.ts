/** Where things are: the checkout, the built CLI, the built bench scripts. */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

const findRoot = (from: string): string => {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
};

export const root = findRoot(here);
/** The `airs` command as users run it (`bin` of package.json). */
export const airsBin = join(root, 'dist', 'src', 'adapters', 'cli', 'bin.js');
/** A compiled bench script next to this one, e.g. `script('loadgen')`. */
export const script = (name: string) => join(here, `${name}.js`);
