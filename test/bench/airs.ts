/**
 * The real service, started the way users start it: `node dist/src/adapters/cli/bin.js serve` with PORT, HOST,
 * AIRS_DATA_DIR and AIRS_CONFIG, an account and a key made with the `airs` CLI.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as LmdbStoreModule from '../../src/adapters/lmdb/LmdbStore.js';
import { airsBin, airsModule } from './paths.js';
import { type Child, runChild, startChild } from './processes.js';

/** The config every bench server runs with: enough workers, and limits that never get in the way (the backlog's
 * bound too: a bench's producers do not retry a `503`, and what it measures is how fast the queue is worked). */
export const benchConfig = {
  processing: { concurrency: 64, maxBacklog: 100_000_000 },
  plans: { enterprise: { submitsPerMinute: 100_000_000, pollsPerMinute: 100_000_000, maxQueued: 100_000_000 } },
};

export type Sandbox = {
  readonly dir: string;
  readonly dataDir: string;
  readonly env: NodeJS.ProcessEnv;
};

/** A directory of its own (data + config) under `root`; the environment holds no other AIRS_ variable. */
export const sandbox = (root: string, label: string, config: unknown = benchConfig): Sandbox => {
  const dir = join(root, label);
  const dataDir = join(dir, 'data');
  mkdirSync(dir, { recursive: true });
  const configPath = join(dir, 'airs.config.json');
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('AIRS_') && name !== 'PORT' && name !== 'HOST'),
  );
  return { dir, dataDir, env: { ...base, AIRS_DATA_DIR: dataDir, AIRS_CONFIG: configPath } };
};

/** Runs one `airs` command with `--json` and returns the document it prints. */
export const airsJson = async <T>(
  box: Sandbox,
  args: readonly string[],
  options: { readonly timeoutMs?: number; readonly nodeArgs?: readonly string[]; readonly cpus?: string } = {},
): Promise<T> => {
  const argv = [...(options.nodeArgs ?? []), airsBin(), ...args, '--json'];
  const { exit, stdout, stderr } = await runChild('airs-cli', process.execPath, argv, {
    env: box.env,
    cwd: box.dir,
    cpus: options.cpus,
    timeoutMs: options.timeoutMs ?? 60_000,
  });
  if (exit.code !== 0) throw new Error(`airs ${args.join(' ')} exited ${exit.code ?? exit.signal}: ${stderr.trim()}`);
  return JSON.parse(stdout) as T;
};

export type Credentials = { readonly accountId: string; readonly keyId: string; readonly key: string };

/** An enterprise account and one key for it, made with the CLI. */
export const createAccountWithKey = async (box: Sandbox, email = 'bench@example.com'): Promise<Credentials> => {
  const account = await airsJson<{ id: string }>(box, ['accounts', 'create', '--email', email, '--plan', 'enterprise']);
  const key = await airsJson<{ id: string; key: string }>(box, ['keys', 'create', '--account', account.id]);
  return { accountId: account.id, keyId: key.id, key: key.key };
};

export type RunningAirs = {
  readonly child: Child;
  readonly url: string;
  /** From spawn to the `airs listening on` line. */
  readonly listeningMs: number;
};

/** Starts `airs serve` on 127.0.0.1 (a free port, or `port`), optionally pinned and with extra node flags (--cpu-prof). */
export const startAirs = async (
  box: Sandbox,
  options: {
    readonly cpus?: string;
    readonly nodeArgs?: readonly string[];
    readonly timeoutMs?: number;
    readonly processes?: number;
    /** A fixed port, as an operator gives it (default 0: any free port). */
    readonly port?: number;
    /** More environment for the server (LOG_LEVEL...). */
    readonly env?: NodeJS.ProcessEnv;
  } = {},
): Promise<RunningAirs> => {
  const started = performance.now();
  const child = startChild(
    'airs serve',
    process.execPath,
    [...(options.nodeArgs ?? []), airsBin(), 'serve', '--processes', String(options.processes ?? 1)],
    {
      env: { ...box.env, ...options.env, PORT: String(options.port ?? 0), HOST: '127.0.0.1' },
      cwd: box.dir,
      cpus: options.cpus,
    },
  );
  try {
    const match = await child.waitFor(/airs listening on (http:\/\/\S+?)\/?\s/, options.timeoutMs ?? 30_000);
    return { child, url: match[1] as string, listeningMs: performance.now() - started };
  } catch (error) {
    await child.stop('SIGKILL');
    throw error;
  }
};

/**
 * Opens the LMDB store of a data directory beside its running server (to read it) with the store code of the airs
 * under test: under `--against` the other revision's data is read by that revision's own code.
 */
export const openAirsLmdbStore = async (dataDir: string): Promise<LmdbStoreModule.LmdbStore> => {
  const module = (await import(airsModule('adapters/lmdb/LmdbStore'))) as typeof LmdbStoreModule;
  return module.openLmdbStore(dataDir);
};

/** The headers of an authenticated call. */
export const authHeaders = (key: string, json = false): Record<string, string> => ({
  authorization: `Bearer ${key}`,
  ...(json ? { 'content-type': 'application/json' } : {}),
});

/** One call over HTTP (for set-up and checks, never for measurement). */
export const call = async (url: string, method: 'GET' | 'POST', path: string, key: string, body?: unknown) => {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: authHeaders(key, body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Submits one echo request and polls it (every 20 ms, at most `timeoutMs`) until it is completed. */
export const completedRequest = async (url: string, key: string, prompt = 'hello', timeoutMs = 10_000) => {
  const submitted = await call(url, 'POST', '/v1/ai', key, { model: 'echo', prompt });
  if (submitted.status !== 202)
    throw new Error(`POST /v1/ai answered ${submitted.status}: ${JSON.stringify(submitted.body)}`);
  const reqId = String(submitted.body.request_id);
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const polled = await call(url, 'GET', `/v1/ai?req_id=${encodeURIComponent(reqId)}`, key);
    if (polled.status === 200 && polled.body.status === 'completed') return reqId;
    await sleep(20);
  }
  throw new Error(`request ${reqId} was not completed within ${timeoutMs} ms`);
};
