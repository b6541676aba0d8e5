import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMainThread } from 'node:worker_threads';
import { afterAll } from 'vitest';

/** Helpers for tests that run the real `airs` CLI and server as child processes (built into dist/ by `tsc`). */

/** The checkout: the nearest folder above this file with a package.json (this file may run from dist/test/). */
const findRoot = (from: string): string => {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
};
const root = findRoot(dirname(fileURLToPath(import.meta.url)));

// What a test writes into a data directory itself (an app started in-process, an LMDB file opened to damage or
// tamper with it) stands for what airs writes, and airs keeps its files to their owner (bin.ts sets the umask): so
// does the test process, or every command run on such a directory would add its warning about open modes.
if (isMainThread) process.umask(0o077);
export const binPath = join(root, 'dist', 'src', 'adapters', 'cli', 'bin.js');

const assertBuilt = () => {
  if (!existsSync(binPath)) throw new Error(`${binPath} is missing: run "npx tsc -p ." first`);
};

/** A temporary home for one test: a data directory, a working directory and an optional config file. */
export type Sandbox = {
  readonly dir: string;
  readonly dataDir: string;
  /** The environment a child gets: only what the test chose, plus PATH and the like. */
  env(extra?: Record<string, string>): NodeJS.ProcessEnv;
  /**
   * Writes `config` (an object, or raw text) as the config file that `env()` points AIRS_CONFIG at. An object that
   * does not name `shutdownDelaySeconds` gets 0: a stopped server would otherwise hold its port for the default 2 s,
   * which every test that stops one would wait out. Raw text is written as it is (a test of the default uses it).
   */
  writeConfig(config: unknown): string;
  /** Whether a config file was written. */
  hasConfig(): boolean;
  remove(): void;
};

export const sandbox = (label = 'airs-proc'): Sandbox => {
  const dir = mkdtempSync(join(tmpdir(), `${label}-`));
  const dataDir = join(dir, 'data');
  const configPath = join(dir, 'airs.test-config.json');
  let hasConfig = false;
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('AIRS_') && name !== 'PORT' && name !== 'HOST'),
  );
  return {
    dir,
    dataDir,
    env: (extra = {}) => ({
      ...base,
      AIRS_DATA_DIR: dataDir,
      ...(hasConfig ? { AIRS_CONFIG: configPath } : {}),
      ...extra,
    }),
    writeConfig: (config) => {
      writeFileSync(
        configPath,
        typeof config === 'string'
          ? config
          : JSON.stringify({ shutdownDelaySeconds: 0, ...(config as Record<string, unknown>) }),
      );
      hasConfig = true;
      return configPath;
    },
    hasConfig: () => hasConfig,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
};

export type CliResult = { readonly code: number | null; readonly stdout: string; readonly stderr: string };

const children = new Set<ChildProcess>();

/**
 * Runs one CLI command to its end (killed after `timeoutMs`, so a hung command fails the test instead). `wrapper`
 * runs it under another program, as for `startServer`.
 */
export const runCli = (
  box: Sandbox,
  args: readonly string[],
  options: { timeoutMs?: number; env?: Record<string, string>; input?: string; wrapper?: readonly string[] } = {},
) =>
  new Promise<CliResult>((resolvePromise, reject) => {
    assertBuilt();
    const [file = process.execPath, ...rest] = [...(options.wrapper ?? []), process.execPath, binPath, ...args];
    const child = spawn(file, rest, {
      cwd: box.dir,
      env: box.env(options.env),
      stdio: 'pipe',
    });
    // Empty stdin unless the test gives some: the child reads end of file at once, as from /dev/null.
    child.stdin.end(options.input ?? '');
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 20_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      children.delete(child);
      resolvePromise({ code, stdout, stderr });
    });
  });

/** Runs a CLI command that must succeed and print one JSON document; returns the document. */
export const cliJson = async <T = unknown>(box: Sandbox, args: readonly string[]): Promise<T> => {
  const result = await runCli(box, [...args, '--json']);
  if (result.code !== 0) throw new Error(`airs ${args.join(' ')} exited ${result.code}: ${result.stderr.trim()}`);
  return JSON.parse(result.stdout) as T;
};

export type CreatedKey = { id: string; key: string; prefix: string; account_id: string };

/** Creates an account on `plan` and one key for it, both through the CLI. */
export const createAccountWithKey = async (box: Sandbox, email: string, plan = 'free') => {
  const account = await cliJson<{ id: string }>(box, ['accounts', 'create', '--email', email, '--plan', plan]);
  const key = await cliJson<CreatedKey>(box, ['keys', 'create', '--account', account.id]);
  return { accountId: account.id, key: key.key, keyId: key.id };
};

export type ServerProcess = {
  readonly child: ChildProcess;
  /** The URL the server printed, without the trailing slash. */
  readonly url: string;
  /** What the server wrote on stderr so far (its logs), for failure messages. */
  stderr(): string;
  /** Sends `signal` and resolves when the process has exited. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
};

/**
 * Starts `airs serve` on a free port of 127.0.0.1 (unless `env` names a `PORT`) and resolves once it prints the URL it
 * listens on. `wrapper` runs it under another program (e.g. `['strace', ..., '--']`), which must pass the server's
 * stdout through; `env` adds to its environment.
 */
export const startServer = (
  box: Sandbox,
  options: {
    timeoutMs?: number;
    wrapper?: readonly string[];
    env?: Record<string, string>;
    /** More arguments of `airs serve` (`--processes 2`). */
    args?: readonly string[];
  } = {},
) =>
  new Promise<ServerProcess>((resolvePromise, reject) => {
    assertBuilt();
    // No hold on the port when stopped (see `writeConfig`); otherwise the built-in defaults, as without a file.
    if (!box.hasConfig()) box.writeConfig({});
    const [file = process.execPath, ...args] = [
      ...(options.wrapper ?? []),
      process.execPath,
      binPath,
      'serve',
      ...(options.args ?? []),
    ];
    const child = spawn(file, args, {
      cwd: box.dir,
      env: box.env({ PORT: '0', HOST: '127.0.0.1', ...options.env }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    const exited = new Promise<number | null>((done) =>
      child.on('exit', (code, signal) => {
        children.delete(child);
        done(code ?? (signal === null ? null : -1));
      }),
    );
    let stdout = '';
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-20_000);
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`airs serve printed no URL in time; stdout: ${stdout} stderr: ${stderr}`));
    }, options.timeoutMs ?? 20_000);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`airs serve exited (${code}) before listening: ${stderr.trim()}`));
    });
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const match = /airs listening on (http:\/\/\S+)/.exec(stdout);
      if (match?.[1] === undefined) return;
      clearTimeout(timer);
      resolvePromise({
        child,
        url: match[1].replace(/\/$/, ''),
        stderr: () => stderr,
        stop: async (signal = 'SIGTERM') => {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          return exited;
        },
      });
    });
  });

/** A `wrapper` that runs a command under `umask` (octal, e.g. '000': everything it creates readable by all). */
export const underUmask = (umask: string): readonly string[] => ['/bin/sh', '-c', `umask ${umask} && exec "$@"`, 'sh'];

/** Kills every child these helpers started that is still running (for afterEach/afterAll). */
export const killChildren = async () => {
  const running = [...children];
  await Promise.all(
    running.map(
      (child) =>
        new Promise<void>((done) => {
          if (child.exitCode !== null || child.signalCode !== null) return done();
          child.once('exit', () => done());
          child.kill('SIGKILL');
        }),
    ),
  );
  children.clear();
};

export type ApiError = { error: { code: string; message: string } };

/** One call to the service over real HTTP. */
export const call = async (url: string, method: 'GET' | 'POST', path: string, key?: string, body?: unknown) => {
  const headers: Record<string, string> = {};
  if (key !== undefined) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, unknown>,
  };
};

export const submit = (url: string, key: string, model: string, prompt: string) =>
  call(url, 'POST', '/v1/ai', key, { model, prompt });

export const poll = (url: string, key: string, reqId: string) =>
  call(url, 'GET', `/v1/ai?req_id=${encodeURIComponent(reqId)}`, key);

export const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/**
 * What the server wrote on stderr, once it shows `pattern` (or after `timeoutMs`, for the assertion to fail on). Its
 * log lines are written asynchronously and come through another pipe than its answers: one logged before an answer
 * may be read after it.
 */
export const stderrShowing = async (server: ServerProcess, pattern: RegExp, timeoutMs = 10_000): Promise<string> => {
  const deadline = Date.now() + timeoutMs;
  while (!pattern.test(server.stderr()) && Date.now() < deadline) await sleep(20);
  return server.stderr();
};

/**
 * Sandboxes for one test file: each call makes one; when the file's tests are done, the children still running are
 * killed and every sandbox is removed.
 */
export const fileSandboxes = () => {
  const boxes: Sandbox[] = [];
  afterAll(async () => {
    await killChildren();
    for (const box of boxes) box.remove();
  });
  return (label: string): Sandbox => {
    const box = sandbox(label);
    boxes.push(box);
    return box;
  };
};

/**
 * The pids of the server processes that wrote access lines (`answered`, at debug: start the server with
 * `LOG_LEVEL=debug`) for `path`, and for `method` when given.
 */
export const servingPids = (server: ServerProcess, path: string, method?: string) => {
  const pids = new Set<number>();
  for (const line of server.stderr().split('\n')) {
    if (!line.startsWith('{')) continue;
    const entry = JSON.parse(line) as { msg?: string; path?: string; method?: string; pid?: number };
    if (entry.msg !== 'answered' || entry.path !== path || entry.pid === undefined) continue;
    if (method === undefined || entry.method === method) pids.add(entry.pid);
  }
  return pids;
};
