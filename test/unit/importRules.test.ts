import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The store adapters (src/adapters/lmdb, memory, postgres) share what they share through src/storage/, never through
 * each other's files: `airs migrate` reads an LMDB directory through storage/logSource.ts, which the LMDB adapter
 * implements. And no file of src/ (the adapters, storage, the app or the domain) is part of an import circle.
 */
const root = resolve(import.meta.dirname, '../../src');
const stores = ['adapters/lmdb', 'adapters/memory', 'adapters/postgres'];

const filesUnder = (dir: string): string[] =>
  readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : /\.tsx?$/.test(entry.name) ? [join(dir, entry.name)] : [],
  );

/** A `.js` import names a `.ts` file, or a `.tsx` one (the dashboard's views). */
const sourceOf = (path: string) => {
  const ts = path.replace(/\.js$/, '.ts');
  return existsSync(join(root, ts)) ? ts : path.replace(/\.js$/, '.tsx');
};

/** The files of src/ a file imports (static, dynamic or type-only), as paths under src/ ending in .ts. */
const importsOf = (file: string): string[] =>
  [...readFileSync(join(root, file), 'utf8').matchAll(/(?:from|import\(?)\s*'(\.[^']+)'/g)].map(([, spec]) =>
    sourceOf(relative(root, resolve(join(root, file, '..'), spec as string))),
  );

const storeOf = (file: string) => stores.find((store) => file.startsWith(`${store}/`));

describe('The imports of src/', () => {
  it("no store adapter imports another store adapter's files", () => {
    const crossings = stores.flatMap((store) =>
      filesUnder(store).flatMap((file) =>
        importsOf(file)
          .filter((target) => storeOf(target) !== undefined && storeOf(target) !== store)
          .map((target) => `${file} imports ${target}`),
      ),
    );
    expect(crossings).toEqual([]);
  });

  it('no file of src/ is part of an import circle', () => {
    const files = filesUnder('.');
    const circles: string[] = [];
    for (const start of files) {
      // Depth first from `start` through the files it imports: back at `start` is a circle.
      const seen = new Set<string>();
      const walk = (file: string, path: readonly string[]) => {
        for (const target of importsOf(file)) {
          if (target === start) circles.push([...path, target].join(' -> '));
          else if (files.includes(target) && !seen.has(target)) {
            seen.add(target);
            walk(target, [...path, target]);
          }
        }
      };
      walk(start, [start]);
    }
    expect(circles).toEqual([]);
  });
});
