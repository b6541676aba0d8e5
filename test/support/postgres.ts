import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
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
 * `startCluster` is the same with other settings (the bench's cluster: test/bench/postgres.ts).
 */

export type TestCluster = {
  readonly port: number;
  readonly dir: string;
  /** A URL for database `name` on the cluster. */
  url(name?: string): string;
  /** The user id and group id the cluster runs as (who must own a tablespace's directory). */
  readonly owner: { readonly uid: number; readonly gid: number };
  /** A new, empty database (from template0) and its URL; with `location`, in a new tablespace there (an empty
   * directory the cluster's user owns). */
  createDatabase(location?: string): Promise<string>;
  /** Drops a database made by `createDatabase` (closing what is still connected to it), and its tablespace. */
  dropDatabase(url: string): Promise<void>;
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
type Wrap = (command: string, args: readonly string[]) => [string, string[]];

/** Runs a PostgreSQL program as the user that owns the cluster (its command line wrapped by `wrap`, if given). */
const run = (program: string, args: readonly string[], wrap?: Wrap) => {
  const [command, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', program, ...args]] : [program, [...args]];
  const [file, fileArgs] = wrap === undefined ? [command, argv] : wrap(command, argv);
  return execFileSync(file, fileArgs, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
};

/** How a cluster is started: the tests' cluster, or the bench's (test/bench/postgres.ts). */
export type ClusterOptions = {
  /** Server settings (`-c name=value`) besides the port, the socket directory and 127.0.0.1. */
  readonly settings: Readonly<Record<string, string>>;
  /** Wraps each PostgreSQL program's command line (the bench pins the cluster to a CPU with taskset: the postmaster
   * and every backend it forks inherit the affinity). */
  readonly wrap?: Wrap;
};

export type Cluster = TestCluster & {
  /** The postmaster's process id (its backends are its children). */
  readonly pid: number;
  /** Stops the cluster (pg_ctl -m immediate) and removes its directory. */
  stop(): Promise<void>;
};

/** The tests' settings: the server's default is `synchronous_commit = off`, so the tests also show that the store
 * turns it on for itself. */
const testSettings = { synchronous_commit: 'off', max_connections: '300', shared_buffers: '64MB' };

/** Starts a throwaway cluster (initdb in a temporary directory, pg_ctl on a free port); `stop` removes it, and so does
 * the end of this process. */
export const startCluster = async (options: ClusterOptions): Promise<Cluster> => {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'airs-pg-'));
  const owner = { uid: Number(run('id', ['-u']).trim()), gid: Number(run('id', ['-g']).trim()) };
  if (asRoot) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, 'data');
  run(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C.UTF-8']);
  const port = await freePort();
  const serverOptions = [
    `-p ${port}`,
    `-k ${dir}`,
    '-c listen_addresses=127.0.0.1',
    ...Object.entries(options.settings).map(([name, value]) => `-c ${name}=${value}`),
  ].join(' ');
  run(
    join(bin, 'pg_ctl'),
    ['-D', data, '-w', '-t', '60', '-l', join(dir, 'server.log'), '-o', serverOptions, 'start'],
    options.wrap,
  );
  const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  let stopped = false;
  const stopNow = () => {
    if (stopped) return;
    stopped = true;
    try {
      run(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
    } catch {
      // Already stopped.
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', stopNow);
  const url = (name = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${name}`;
  const admin = postgres(url(), { max: 2, onnotice: () => {} });
  let databases = 0;
  return {
    port,
    dir,
    url,
    owner,
    pid,
    createDatabase: async (location) => {
      const name = `airs_test_${process.pid}_${++databases}`;
      if (location === undefined) {
        await admin.unsafe(`CREATE DATABASE ${name} TEMPLATE template0`);
        return url(name);
      }
      await admin.unsafe(`CREATE TABLESPACE ${name} LOCATION '${location.replaceAll("'", "''")}'`);
      await admin.unsafe(`CREATE DATABASE ${name} TEMPLATE template0 TABLESPACE ${name}`);
      return url(name);
    },
    dropDatabase: async (databaseUrl) => {
      const name = new URL(databaseUrl).pathname.slice(1);
      if (!/^airs_test_\d+_\d+$/.test(name)) throw new Error(`not a test database: ${name}`);
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.unsafe(`DROP TABLESPACE IF EXISTS ${name}`);
    },
    stop: async () => {
      await admin.end({ timeout: 1 });
      stopNow();
    },
  };
};

let started: Promise<Cluster> | undefined;

/** The cluster of this test process, started on first use. */
export const testCluster = (): Promise<TestCluster> => {
  started ??= startCluster({ settings: testSettings });
  return started;
};

/** Stops and removes the cluster (pg_ctl -m immediate), if one was started. */
export const stopTestCluster = async () => {
  const cluster = started;
  started = undefined;
  await (await cluster?.catch(() => undefined))?.stop();
};
