/** What Linux says about a process: its memory (/proc/PID/status) and CPU time used (/proc/PID/stat). */
import { readFileSync } from 'node:fs';
import { processTree, startCpuMeter } from './cpuTime.js';

export type Memory = { readonly rssMiB: number; readonly anonMiB: number; readonly fileMiB: number };

export const memoryOf = (pid: number): Memory | undefined => {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
    const mib = (value: number) => Math.round((value / 1024) * 10) / 10;
    return { rssMiB: mib(kib('VmRSS')), anonMiB: mib(kib('RssAnon')), fileMiB: mib(kib('RssFile') + kib('RssShmem')) };
  } catch {
    return undefined;
  }
};

/** User + system CPU time of the process, in clock ticks (usually 1/100 s). */
export const cpuTicksOf = (pid: number): number | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits until the process and every process below it (the workers of `airs serve --processes N`) have used less than
 * `maxShare` of one CPU together over a `windowMs` window (so that background work, such as airs processing a
 * backlog, does not run into the next measurement). Bounded by `timeoutMs`.
 * Returns how long it waited, and whether it became idle.
 */
export const waitForIdle = async (
  pid: number,
  options: { readonly windowMs?: number; readonly maxShare?: number; readonly timeoutMs: number },
) => waitForIdleAll(() => processTree(pid), options);

/**
 * The same for a set of processes that may change (a PostgreSQL cluster's backends come and go): `pids` is asked at
 * the start and at the end of each window (cpuTime.ts: to the nanosecond where it can); idle means all of them
 * together used less than `maxShare` of one CPU over the window. Ends at once when none of them is left.
 */
export const waitForIdleAll = async (
  pids: () => readonly number[],
  options: { readonly windowMs?: number; readonly maxShare?: number; readonly timeoutMs: number },
) => {
  const windowMs = options.windowMs ?? 200;
  const maxShare = options.maxShare ?? 0.05;
  const started = performance.now();
  while (performance.now() - started < options.timeoutMs) {
    if (pids().length === 0) break;
    const meter = startCpuMeter(pids);
    await sleep(windowMs);
    const use = meter.read();
    if (use.processes === 0) break;
    if (use.seconds / use.wallSeconds <= maxShare)
      return { idle: true, waitedMs: Math.round(performance.now() - started) };
  }
  return { idle: false, waitedMs: Math.round(performance.now() - started) };
};
