import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * docs/architecture.md names files and folders of the repository; each must exist, or the tour misleads whoever
 * follows it. A name is a word ending in `.ts`, `.tsx` or `.md` (in backticks or not), or a backticked folder path
 * under a top folder of the code (`adapters/http`, `test/contract`). The doc writes paths from the repository root
 * (`src/app/Sweeper.ts`), from `src/` (`domain/request/machine.ts`), from `src/adapters/` (`lmdb/limits.ts`) or from
 * a folder its section's heading names (`request/state.ts` under "Domain (`src/domain`)"); a bare file name
 * (`codec.ts`) must be the name of some file of `src/` or `test/`. Names with a placeholder (`<name>.ts`) are
 * patterns, not files.
 */

const root = new URL('../../', import.meta.url).pathname;
const docPath = 'docs/architecture.md';

/** Where a path with a folder in it may start. */
const bases = ['', 'src/', 'src/adapters/', 'test/'];

/** The first folder of a backticked folder path that names the code (not an HTTP route or a MIME type). */
const codeFolders = /^(src|test|docs|domain|app|adapters|ports|storage|client)(\/[\w.-]+)*\/?$/;

const fileName = /(?<![\w/.<>-])(?:[\w.-]+\/)*[\w.-]+\.(?:ts|tsx|md)(?![\w])/g;

const filesUnder = (folder: string): string[] =>
  readdirSync(join(root, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => entry.name);

/** A path the doc names: on which line, and the folders its section is about (its heading's `src/…` paths). */
type Named = { readonly line: number; readonly path: string; readonly sectionFolders: readonly string[] };

/** Every file or folder path the doc names, with the line it is on. */
const namedPaths = (text: string): Named[] => {
  const named: Named[] = [];
  let sectionFolders: string[] = [];
  text.split('\n').forEach((content, index) => {
    const line = index + 1;
    if (content.startsWith('## ')) {
      sectionFolders = [...content.matchAll(/`(src\/[^`\s]+)`/g)].map((match) => `${match[1]}/`);
    }
    const name = (path: string) => named.push({ line, path, sectionFolders });
    for (const match of content.matchAll(fileName)) name(match[0]);
    for (const match of content.matchAll(/`([^`\s]+)`/g)) {
      const quoted = match[1] as string;
      if (codeFolders.test(quoted) && !/\.(ts|tsx|md)$/.test(quoted)) name(quoted);
    }
  });
  return named.filter((each) => !each.path.includes('<'));
};

const exists = (named: Named, bareNames: ReadonlySet<string>) =>
  named.path.includes('/')
    ? [...bases, ...named.sectionFolders].some((base) => existsSync(join(root, base, named.path.replace(/\/$/, ''))))
    : bareNames.has(named.path);

describe('docs/architecture.md', () => {
  it('names only files and folders that exist', () => {
    const text = readFileSync(join(root, docPath), 'utf8');
    const bareNames = new Set([...filesUnder('src'), ...filesUnder('test'), 'README.md']);
    const named = namedPaths(text);
    // The doc is a tour of the code: it names many of its files.
    expect(named.length).toBeGreaterThan(100);
    const missing = named.filter((each) => !exists(each, bareNames));
    expect(
      missing.map((each) => `${docPath}:${each.line}: ${each.path}`),
      `files or folders named in ${docPath} that do not exist (from the root, src/, src/adapters/ or test/)`,
    ).toEqual([]);
  });
});
