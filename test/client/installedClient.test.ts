import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createAccountWithKey,
  killChildren,
  type Sandbox,
  type ServerProcess,
  sandbox,
  startServer,
} from '../support/processes.js';

/**
 * `airs/client` used from another project, as the README's "`airs/client` in another project" says: a temp project
 * outside this checkout installs airs, by path with npm, or from the tarball `npm pack` writes, and runs the README's
 * client example, copied from the README as written, against a real `airs serve`.
 */

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** The README's client example: the first ```ts block after its marker comment, so the test cannot drift from it. */
const example = (() => {
  const marker = readme.indexOf('<!-- airs/client example:');
  const block = /```ts\n([\s\S]*?)```/.exec(readme.slice(marker));
  if (marker < 0 || block?.[1] === undefined) throw new Error('README.md has no marked airs/client example');
  return block[1];
})();

/** npm and node for the temp project: this test's environment without what `npm test` sets for this checkout
 * (`npm_config_local_prefix`, `npm_package_*`, …), so npm reads its own settings there as a user's shell would. */
const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')));

/** A project of its own under the OS's temp directory, far from this checkout and its node_modules. */
const project = () => {
  const dir = mkdtempSync(join(tmpdir(), 'airs-consumer-'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  return dir;
};

describe('airs/client installed in another project', { timeout: 60_000 }, () => {
  let box: Sandbox;
  let server: ServerProcess;
  let key: string;
  const dirs: string[] = [];

  beforeAll(async () => {
    box = sandbox('airs-installed-client');
    server = await startServer(box);
    ({ key } = await createAccountWithKey(box, 'consumer@example.com'));
  }, 60_000);

  afterAll(async () => {
    await killChildren();
    box?.remove();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  /** Saves the README example in `dir` (the one liberty: the test server's port) and runs it with node. */
  const runExample = async (dir: string) => {
    writeFileSync(join(dir, 'run.mjs'), example.replaceAll('http://127.0.0.1:8080', server.url));
    const { stdout, stderr } = await run(process.execPath, ['run.mjs'], {
      cwd: dir,
      env: { ...env, AIRS_API_KEY: key },
      timeout: 30_000,
    });
    return { stdout, stderr };
  };

  it('runs the README example after a path install (npm install /path/to/airs), with nothing downloaded', async () => {
    const dir = project();
    dirs.push(dir);
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', root], {
      cwd: dir,
      env,
      timeout: 30_000,
    });
    // The package the example imports is this checkout, reached through the project's node_modules.
    expect(realpathSync(join(dir, 'node_modules', 'airs'))).toBe(realpathSync(root));
    expect(await runExample(dir)).toEqual({ stdout: 'Hello, airs\n', stderr: '' });
  });

  it('type-checks the README example as TypeScript (nodenext) against the installed package’s types', async () => {
    const dir = project();
    dirs.push(dir);
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', root], {
      cwd: dir,
      env,
      timeout: 30_000,
    });
    writeFileSync(join(dir, 'run.ts'), example);
    // A TypeScript project of the reader's, with @types/node (taken from this checkout: nothing is downloaded).
    const compilerOptions = {
      module: 'nodenext',
      moduleResolution: 'nodenext',
      target: 'ES2022',
      strict: true,
      noEmit: true,
      typeRoots: [join(root, 'node_modules', '@types')],
      types: ['node'],
    };
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['run.ts'] }));
    const tsc = join(root, 'node_modules', '.bin', 'tsc');
    const checked = await run(tsc, ['-p', 'tsconfig.json'], { cwd: dir, env, timeout: 30_000 }).catch(
      (error: { stdout?: string }) => ({ stdout: error.stdout ?? String(error) }),
    );
    expect(checked.stdout).toBe('');
  });

  it('runs the README example from the npm pack tarball, which carries the client and its types but no tests', async () => {
    const dir = project();
    dirs.push(dir);
    // `npm test` built dist/ already; the tarball's `prepare` would build it again into this checkout meanwhile.
    const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], {
      cwd: root,
      env,
      timeout: 30_000,
    });
    const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
    const files = (packed?.files ?? []).map((file) => file.path);
    expect(files).toEqual(
      expect.arrayContaining(['package.json', 'dist/src/client/index.js', 'dist/src/client/index.d.ts']),
    );
    expect(
      files.filter(
        (path) =>
          !path.startsWith('dist/src/') &&
          !path.startsWith('dist/cli/') &&
          path !== 'package.json' &&
          path !== 'README.md',
      ),
    ).toEqual([]);
    // The CLI's bundle is shipped; the script that builds it is not.
    expect(files.some((path) => path.startsWith('dist/cli/'))).toBe(true);
    expect(files.filter((path) => path.includes('/bundle.'))).toEqual([]);
    // Unpacked where `npm install <tgz>` puts it. npm itself is not used here: it would fetch the server's
    // dependencies from the registry, which the client never loads and a test cannot reach.
    const target = join(dir, 'node_modules', 'airs');
    mkdirSync(target, { recursive: true });
    await run('tar', ['-xzf', join(dir, packed?.filename ?? ''), '-C', target, '--strip-components=1'], {
      timeout: 30_000,
    });
    expect(await runExample(dir)).toEqual({ stdout: 'Hello, airs\n', stderr: '' });
  });
});
