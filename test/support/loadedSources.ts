import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { binPath } from './processes.js';

/**
 * The sources an `airs` command loads, recorded by a module hook in the child: a file of the CLI's bundle
 * (dist/cli/, bin.js) stands for the sources its source map names (`../../node_modules/zod/…`, `../../src/…`); a
 * file outside it (an external package such as lmdb) for itself. Fails unless the command exits 0.
 */
export const sourcesLoadedBy = (args: readonly string[], options: { cwd: string; env: NodeJS.ProcessEnv }) => {
  const dir = mkdtempSync(join(tmpdir(), 'airs-loaded-'));
  try {
    const log = join(dir, 'loaded.txt');
    writeFileSync(log, '');
    writeFileSync(
      join(dir, 'hooks.mjs'),
      `import { appendFileSync } from 'node:fs';\nexport async function load(url, context, next) { appendFileSync(${JSON.stringify(log)}, url + '\\n'); return next(url, context); }\n`,
    );
    writeFileSync(
      join(dir, 'register.mjs'),
      `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});\n`,
    );
    const run = spawnSync(
      process.execPath,
      ['--import', pathToFileURL(join(dir, 'register.mjs')).href, binPath, ...args],
      { ...options, encoding: 'utf8' },
    );
    if (run.status !== 0) throw new Error(`airs ${args.join(' ')} exited ${run.status}: ${run.stderr}`);
    const urls = readFileSync(log, 'utf8').split('\n').filter(Boolean);
    return urls.flatMap((url) => {
      if (!url.startsWith('file:') || url.includes('/node_modules/')) return [url];
      const map = `${fileURLToPath(url)}.map`;
      return existsSync(map) ? (JSON.parse(readFileSync(map, 'utf8')) as { sources: string[] }).sources : [url];
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

/** The npm packages among `sources`. */
export const packagesIn = (sources: readonly string[]) =>
  new Set(sources.flatMap((source) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(source)?.[1] ?? []));
