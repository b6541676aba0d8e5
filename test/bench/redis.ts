/** Debian's redis-server for the BullMQ baseline, started by the bench with every write fsynced before its reply. */
import { existsSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { which } from './cpus.js';
import { type Child, startChild } from './processes.js';

/** `$REDIS_SERVER` if set (a path; a missing one counts as no redis-server), else redis-server on PATH. */
export const redisServerPath = (): string | undefined => {
  const chosen = process.env.REDIS_SERVER;
  if (chosen !== undefined && chosen !== '') return existsSync(chosen) ? chosen : undefined;
  return which('redis-server');
};

/** A port free on 127.0.0.1 right now. */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });

export type RunningRedis = { readonly child: Child; readonly port: number; readonly version: string };

export const startRedis = async (path: string, dir: string, cpus: string | undefined): Promise<RunningRedis> => {
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--protected-mode',
    'yes',
    '--dir',
    dir,
    '--appendonly',
    'yes',
    '--appendfsync',
    'always',
    '--save',
    '',
    '--daemonize',
    'no',
    '--logfile',
    '',
  ];
  const child = startChild('redis-server', path, args, { cpus });
  try {
    await child.waitFor(/Ready to accept connections/, 20_000);
  } catch (error) {
    await child.stop('SIGKILL');
    throw error;
  }
  const version = /Redis version=([\d.]+)/.exec(child.stdout())?.[1] ?? 'unknown';
  return { child, port, version };
};

export const redisDir = (root: string) => join(root, 'redis');
