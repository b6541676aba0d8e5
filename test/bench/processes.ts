/**
 * Every child process the bench starts goes through `startChild`, so that all of them are stopped at the end:
 * on success, on failure, on Ctrl-C and, as a last resort, with SIGKILL when the bench process exits.
 */
import { type ChildProcess, type StdioOptions, spawn } from 'node:child_process';
import { pinned } from './cpus.js';

export type Exit = { readonly code: number | null; readonly signal: NodeJS.Signals | null };

export type Child = {
  readonly name: string;
  readonly process: ChildProcess;
  readonly pid: number;
  /** Resolves when the process has exited (never rejects). */
  readonly exited: Promise<Exit>;
  stdout(): string;
  stderr(): string;
  running(): boolean;
  /** Resolves with the first match of `pattern` in stdout; rejects on exit or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  /** SIGTERM (or `signal`), then SIGKILL after `graceMs`; resolves once the process is gone. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<Exit>;
};

export type ChildOptions = {
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** CPU list for taskset (`"0"`, `"2,3"`), or undefined for no pinning. */
  readonly cpus?: string;
  /** Adds an IPC channel (for children that report by message). */
  readonly ipc?: boolean;
};

const live = new Set<Child>();
const keepChars = 64 * 1024;

export const startChild = (
  name: string,
  command: string,
  args: readonly string[],
  options: ChildOptions = {},
): Child => {
  const [file, argv] = pinned(command, args, options.cpus);
  const stdio: StdioOptions = options.ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'];
  const proc = spawn(file, argv, { env: options.env ?? process.env, cwd: options.cwd, stdio });
  let out = '';
  let err = '';
  let listeners: Array<() => boolean> = [];
  proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    out = (out + chunk).slice(-keepChars);
    for (const listener of listeners) listener();
  });
  proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    err = (err + chunk).slice(-keepChars);
  });
  let done = false;
  const exited = new Promise<Exit>((resolve) => {
    proc.on('error', (error) => {
      err += `\nspawn failed: ${error.message}`;
      done = true;
      resolve({ code: -1, signal: null });
    });
    proc.on('exit', (code, signal) => {
      done = true;
      resolve({ code, signal });
    });
  });
  const child: Child = {
    name,
    process: proc,
    pid: proc.pid ?? -1,
    exited,
    stdout: () => out,
    stderr: () => err,
    running: () => !done,
    waitFor: (pattern, timeoutMs) =>
      new Promise((resolve, reject) => {
        let timer: NodeJS.Timeout | undefined;
        const finish = () => {
          clearTimeout(timer);
          listeners = listeners.filter((l) => l !== check);
        };
        const check = () => {
          const match = pattern.exec(out);
          if (match === null) return false;
          finish();
          resolve(match);
          return true;
        };
        if (check()) return;
        timer = setTimeout(() => {
          finish();
          reject(new Error(`${name}: no ${pattern} on stdout within ${timeoutMs} ms; stderr: ${err.slice(-2000)}`));
        }, timeoutMs);
        listeners.push(check);
        void exited.then((exit) => {
          if (check()) return;
          finish();
          reject(
            new Error(`${name} exited (${exit.code ?? exit.signal}) before ${pattern}; stderr: ${err.slice(-2000)}`),
          );
        });
      }),
    stop: async (signal = 'SIGTERM', graceMs = 10_000) => {
      if (!done) {
        proc.kill(signal);
        const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }
      live.delete(child);
      return exited;
    },
  };
  live.add(child);
  void exited.then(() => live.delete(child));
  return child;
};

/** Runs a child to its end within `timeoutMs` (then SIGKILL) and returns its output. */
export const runChild = async (
  name: string,
  command: string,
  args: readonly string[],
  options: ChildOptions & { readonly timeoutMs: number },
) => {
  const child = startChild(name, command, args, options);
  const timer = setTimeout(() => child.process.kill('SIGKILL'), options.timeoutMs);
  const exit = await child.exited;
  clearTimeout(timer);
  return { exit, stdout: child.stdout(), stderr: child.stderr() };
};

/** Stops every child still running: SIGTERM, then SIGKILL after `graceMs`. */
export const stopAll = async (graceMs = 5_000) => {
  await Promise.all([...live].map((child) => child.stop('SIGTERM', graceMs)));
};

/** The last line of defence: whatever is still running when this process exits is killed. */
const killAllNow = () => {
  for (const child of live) if (child.running()) child.process.kill('SIGKILL');
};

let installed = false;

/** Installs the exit hooks once: Ctrl-C and SIGTERM stop the children first, then exit. */
export const installExitHooks = (onSignal: () => Promise<void>) => {
  if (installed) return;
  installed = true;
  process.on('exit', killAllNow);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\nbench: ${signal}, stopping child processes\n`);
      void onSignal().finally(() => process.exit(130));
    });
  }
};
