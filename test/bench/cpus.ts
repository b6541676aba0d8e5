/**
 * CPU pinning: the servers under test get one half of the CPUs this process may use, the load generators the
 * other half, through `taskset` when it exists. Without taskset, or with a single CPU, nothing is pinned.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export type CpuPlan = {
  /** CPU list for the process under test (airs, the bare server, redis-server and the BullMQ worker). */
  readonly server?: string;
  /** CPU list for the load side (autocannon, the BullMQ producers) and for the bench process itself. */
  readonly load?: string;
  /** How the plan came about, for the report. */
  readonly note: string;
  /** Every CPU this process could use at the start, when pinning is on (the cores scenario plans its own split). */
  readonly allowed?: readonly number[];
};

/** An executable on PATH, or undefined. */
export const which = (name: string): string | undefined => {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, name);
    if (dir !== '' && existsSync(candidate)) return candidate;
  }
  for (const dir of ['/usr/bin', '/usr/sbin', '/usr/local/bin', '/bin', '/sbin']) {
    const candidate = join(dir, name);
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
};

const parseList = (list: string): number[] =>
  list
    .trim()
    .split(',')
    .flatMap((part) => {
      const [from, to] = part.split('-').map(Number);
      if (from === undefined || Number.isNaN(from)) return [];
      if (to === undefined) return [from];
      return Array.from({ length: to - from + 1 }, (_, i) => from + i);
    });

let tasksetPath: string | undefined;
/** Every CPU this process could use at the start: what children get when no side is named for them. */
let allCpus: string | undefined;

export const planCpus = (): CpuPlan => {
  tasksetPath = which('taskset');
  if (tasksetPath === undefined) {
    tasksetPath = undefined;
    return { note: 'taskset not found: processes are not pinned' };
  }
  let allowed: number[];
  try {
    const out = execFileSync(tasksetPath, ['-pc', String(process.pid)], { encoding: 'utf8' });
    allowed = parseList(out.split(':').pop() ?? '');
  } catch {
    tasksetPath = undefined;
    return { note: 'taskset failed: processes are not pinned' };
  }
  if (allowed.length < 2) {
    tasksetPath = undefined;
    return { note: `only CPU ${allowed.join(',')} available: processes are not pinned` };
  }
  const half = Math.floor(allowed.length / 2);
  const server = allowed.slice(0, half).join(',');
  const load = allowed.slice(half).join(',');
  allCpus = allowed.join(',');
  return {
    server,
    load,
    note: `taskset: servers on CPU ${server}; load generators and the bench itself on CPU ${load}`,
    allowed,
  };
};

/** Moves this process (all its threads) to `cpus`, so that its own work never lands on the server CPUs. */
export const pinSelf = (cpus: string | undefined) => {
  if (tasksetPath === undefined || cpus === undefined) return;
  execFileSync(tasksetPath, ['-a', '-pc', cpus, String(process.pid)], { stdio: 'ignore' });
};

/**
 * The command line that runs `command args` on `cpus`, or on all CPUs when `cpus` is undefined (the bench itself
 * is pinned, and children would inherit that). Unchanged when pinning is off.
 */
export const pinned = (command: string, args: readonly string[], cpus: string | undefined): [string, string[]] => {
  const list = cpus ?? allCpus;
  return tasksetPath !== undefined && list !== undefined
    ? [tasksetPath, ['-c', list, command, ...args]]
    : [command, [...args]];
};
