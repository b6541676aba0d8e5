import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import pg from 'pg';
import { unusedPort } from './ports.js';

/**
 * A throwaway PostgreSQL cluster for the tests, from the system's binaries (Debian's `postgresql` package; the
 * package's own cluster need not run): one per test process, started on first use (a copy of one initdb'd template
 * in a temporary directory, pg_ctl on a free port, listening on 127.0.0.1 and a socket in that directory), stopped
 * (immediate) and removed when the process ends or `stopTestCluster` is called. As root it runs as the `postgres`
 * user (PostgreSQL refuses root). Missing binaries are a failing setup naming the one command that fixes it, never a
 * skipped test. `startCluster` is the same with other settings (the bench's cluster: test/bench/postgres.ts).
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
  /** Stops the server cleanly (`pg_ctl stop -m fast`: sessions are ended, nothing committed is lost). */
  stopServer(): void;
  /**
   * SIGKILLs the postmaster, as a crash would, and resolves once every process it had started has gone too (they end
   * by themselves when they see it dead; a new postmaster cannot start while they hold its shared memory).
   */
  killPostmaster(): Promise<void>;
  /** Starts the server again on the same port (after `stopServer` or `killPostmaster`: crash recovery runs first). */
  startServer(): void;
  /** Ends (`pg_terminate_backend`) every session of `airs` on the database of `url`; returns how many there were. */
  terminateAirsSessions(url: string): Promise<number>;
  /** How many sessions of `airs` on the database of `url` are LISTENing for changes (one per node that hears). */
  airsListeners(url: string): Promise<number>;
};

/** The newest PostgreSQL server's programs under `root` (Debian's layout), or a failure naming how to install them. */
export const binDir = (root = '/usr/lib/postgresql'): string => {
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
  /** Wraps each start of the server (`pg_ctl start`: the bench pins the cluster to CPUs with taskset; the postmaster
   * and every backend it forks inherit the affinity). */
  readonly wrap?: Wrap;
};

export type Cluster = TestCluster & {
  /** The postmaster's process id now (its backends are its children; a `startServer` starts another). */
  postmaster(): number;
  /** Stops the cluster (pg_ctl -m immediate) and removes its directory. */
  stop(): Promise<void>;
};

/** The tests' settings: the server's default is `synchronous_commit = off`, so the tests also show that the store
 * turns it on for itself. */
const testSettings = { synchronous_commit: 'off', max_connections: '300', shared_buffers: '64MB' };

const stoppers = new Set<() => void>();
let stoppingAtEnd = false;
const endSignals = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;

/**
 * Runs `stop` when this process ends: at its exit, and at a signal that would end it without one (`npm test` stopped
 * with ^C or SIGTERM, a vitest worker ended by its pool), which then ends the process as the signal would have.
 */
const stopAtEnd = (stop: () => void) => {
  if (!stoppingAtEnd) {
    stoppingAtEnd = true;
    process.once('exit', stopAll);
    for (const signal of endSignals)
      process.once(signal, () => {
        stopAll();
        process.kill(process.pid, signal);
      });
  }
  stoppers.add(stop);
};
const stopAll = () => {
  for (const stop of stoppers) stop();
  stoppers.clear();
};

/**
 * An initdb'd data directory made once per machine, user and PostgreSQL version, which every cluster copies (0.1 s,
 * where initdb takes a second of CPU). initdb skips its closing fsync (`--no-sync`): a throwaway cluster's files need
 * not survive a power cut, and under the suite's disk load that fsync took minutes. The server itself keeps fsync on.
 */
const copyTemplate = (bin: string, data: string, owner: { uid: number; gid: number }) => {
  const template = join(tmpdir(), `airs-pg-template-${basename(dirname(bin))}-${process.getuid?.() ?? 0}`);
  if (!existsSync(join(template, 'PG_VERSION'))) {
    const making = mkdtempSync(`${template}-making-`);
    if (asRoot) chownSync(making, owner.uid, owner.gid);
    run(join(bin, 'initdb'), ['-D', making, '-N', '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C.UTF-8']);
    try {
      renameSync(making, template);
    } catch {
      // Another test process made it first: theirs is the same.
      rmSync(making, { recursive: true, force: true });
    }
  }
  // -a keeps the owner (the postgres user, under root) and the modes PostgreSQL insists on (0700).
  execFileSync('cp', ['-a', template, data]);
};

/** Starts a throwaway cluster (a copy of the template in a temporary directory, pg_ctl on a free port); `stop`
 * removes it, and so does the end of this process. */
export const startCluster = async (clusterOptions: ClusterOptions): Promise<Cluster> => {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'airs-pg-'));
  const owner = { uid: Number(run('id', ['-u']).trim()), gid: Number(run('id', ['-g']).trim()) };
  if (asRoot) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, 'data');
  copyTemplate(bin, data, owner);
  const port = await unusedPort();
  const options = [
    `-p ${port}`,
    `-k ${dir}`,
    '-c listen_addresses=127.0.0.1',
    ...Object.entries(clusterOptions.settings).map(([name, value]) => `-c ${name}=${value}`),
  ].join(' ');
  const startServer = () => {
    try {
      run(
        join(bin, 'pg_ctl'),
        ['-D', data, '-w', '-t', '60', '-l', join(dir, 'server.log'), '-o', options, 'start'],
        clusterOptions.wrap,
      );
    } catch (error) {
      const log = existsSync(join(dir, 'server.log'))
        ? readFileSync(join(dir, 'server.log'), 'utf8').slice(-2_000)
        : '';
      throw new Error(`${(error as Error).message}\nserver.log ends:\n${log}`);
    }
  };
  startServer();
  const postmaster = () => Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
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
  stopAtEnd(stopNow);
  const url = (name = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${name}`;
  const admin = new pg.Pool({ connectionString: url(), max: 2 });
  admin.on('error', () => {});
  let databases = 0;
  const databaseOf = (databaseUrl: string) => new URL(databaseUrl).pathname.slice(1);
  return {
    stopServer: () => void run(join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop']),
    startServer: () => void startServer(),
    killPostmaster: async () => {
      const pid = postmaster();
      const children = childrenOf(pid);
      process.kill(pid, 'SIGKILL');
      const deadline = Date.now() + 30_000;
      while ([pid, ...children].some(present)) {
        if (Date.now() > deadline)
          throw new Error('PostgreSQL processes were still running 30 s after the postmaster was killed');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    terminateAirsSessions: async (databaseUrl) => {
      // The sessions are chosen first (OFFSET 0 keeps the planner from folding the choice into the call), so the
      // function is called for exactly those: a condition beside it may be evaluated after it.
      const { rows } = await admin.query(
        `SELECT pid, pg_terminate_backend(pid) FROM (
           SELECT pid FROM pg_stat_activity
           WHERE datname = $1 AND application_name = 'airs' AND pid <> pg_backend_pid()
           OFFSET 0) AS chosen`,
        [databaseOf(databaseUrl)],
      );
      return rows.length;
    },
    airsListeners: async (databaseUrl) => {
      const { rows } = await admin.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = $1 AND application_name = 'airs' AND query ILIKE 'listen %'`,
        [databaseOf(databaseUrl)],
      );
      return rows[0]?.n ?? 0;
    },
    port,
    dir,
    url,
    owner,
    postmaster,
    stop: async () => {
      await admin.end().catch(() => {});
      stopNow();
      stoppers.delete(stopNow);
    },
    createDatabase: async (location) => {
      const name = `airs_test_${process.pid}_${++databases}`;
      if (location === undefined) {
        await admin.query(`CREATE DATABASE ${name} TEMPLATE template0`);
        return url(name);
      }
      await admin.query(`CREATE TABLESPACE ${name} LOCATION '${location.replaceAll("'", "''")}'`);
      await admin.query(`CREATE DATABASE ${name} TEMPLATE template0 TABLESPACE ${name}`);
      return url(name);
    },
    dropDatabase: async (databaseUrl) => {
      const name = new URL(databaseUrl).pathname.slice(1);
      if (!/^airs_test_\d+_\d+$/.test(name)) throw new Error(`not a test database: ${name}`);
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.query(`DROP TABLESPACE IF EXISTS ${name}`);
    },
  };
};

/** The processes whose parent is `pid` (from /proc). */
export const childrenOf = (pid: number): number[] =>
  readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        // pid (comm) state ppid …: the command name may hold spaces and parentheses, so read after its last ')'.
        const stat = readFileSync(join('/proc', name, 'stat'), 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);

/** Whether `pid` is still there: running, or dead but not reaped yet by whoever inherited it (a zombie). */
const present = (pid: number): boolean => existsSync(join('/proc', String(pid)));

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

/** The tables of the database at `url` (none: nothing was made there), read by a client of its own. */
export const tablesIn = async (url: string): Promise<string[]> => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(
      `SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'`,
    );
    return rows.map((row) => row.name);
  } finally {
    await client.end();
  }
};
