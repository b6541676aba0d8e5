import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';

/**
 * A throwaway PostgreSQL cluster for the tests, from the system's binaries (Debian's `postgresql` package; the
 * package's own cluster need not run): one per test process, started on first use (initdb in a temporary directory,
 * pg_ctl on a free port, listening on 127.0.0.1 and a socket in that directory), stopped (immediate) and removed when
 * the process ends or `stopTestCluster` is called. As root it runs as the `postgres` user (PostgreSQL refuses root).
 * Missing binaries are a failing setup naming the one command that fixes it, never a skipped test.
 *
 * The server's default is `synchronous_commit = off`, so the tests also show that the store turns it on for itself.
 */

export type TestCluster = {
  readonly port: number;
  readonly dir: string;
  /** A URL for database `name` on the cluster. */
  url(name?: string): string;
  /** A new, empty database (from template0) and its URL. */
  createDatabase(): Promise<string>;
};

const binDir = (): string => {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((name) => existsSync(join(root, name, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const version = versions[0];
  if (version === undefined)
    throw new Error(
      'PostgreSQL server binaries are missing (no /usr/lib/postgresql/*/bin/initdb): install them with apt-get install -y postgresql',
    );
  return join(root, version, 'bin');
};

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject()));
    });
  });

const asRoot = process.getuid?.() === 0;
/** Runs a PostgreSQL program as the user that owns the cluster. */
const run = (program: string, args: readonly string[]) => {
  const [command, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', program, ...args]] : [program, [...args]];
  return execFileSync(command, argv, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
};

let started: Promise<TestCluster> | undefined;
let stop: (() => void) | undefined;
let closeAdmin: (() => Promise<void>) | undefined;

const start = async (): Promise<TestCluster> => {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'airs-pg-'));
  if (asRoot) chownSync(dir, Number(run('id', ['-u']).trim()), Number(run('id', ['-g']).trim()));
  const data = join(dir, 'data');
  run(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C.UTF-8']);
  const port = await freePort();
  const options = [
    `-p ${port}`,
    `-k ${dir}`,
    '-c listen_addresses=127.0.0.1',
    '-c synchronous_commit=off',
    '-c max_connections=300',
    '-c shared_buffers=64MB',
  ].join(' ');
  run(join(bin, 'pg_ctl'), ['-D', data, '-w', '-t', '60', '-l', join(dir, 'server.log'), '-o', options, 'start']);
  stop = () => {
    stop = undefined;
    try {
      run(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
    } catch {
      // Already stopped.
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', () => stop?.());
  const url = (name = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${name}`;
  const admin = postgres(url(), { max: 2, onnotice: () => {} });
  closeAdmin = () => admin.end({ timeout: 1 });
  let databases = 0;
  return {
    port,
    dir,
    url,
    createDatabase: async () => {
      const name = `airs_test_${process.pid}_${++databases}`;
      await admin.unsafe(`CREATE DATABASE ${name} TEMPLATE template0`);
      return url(name);
    },
  };
};

/** The cluster of this test process, started on first use. */
export const testCluster = (): Promise<TestCluster> => {
  started ??= start();
  return started;
};

/** Stops and removes the cluster (pg_ctl -m immediate), if one was started. */
export const stopTestCluster = async () => {
  await closeAdmin?.();
  closeAdmin = undefined;
  stop?.();
  started = undefined;
};
