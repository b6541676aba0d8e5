/** What Linux says about a process: its memory (/proc/PID/status) and CPU time used (/proc/PID/stat). */
import { readFileSync } from 'node:fs';

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
 * Waits until the process has used less than `maxShare` of one CPU over a `windowMs` window (so that background
 * work, such as airs processing a backlog, does not run into the next measurement). Bounded by `timeoutMs`.
 * Returns how long it waited, and whether it became idle.
 */
export const waitForIdle = async (
  pid: number,
  options: { readonly windowMs?: number; readonly maxShare?: number; readonly timeoutMs: number },
) => waitForIdleAll(() => [pid], options);

/**
 * The same for a set of processes that may change (a PostgreSQL cluster's backends come and go): `pids` is asked at
 * the start of each window, and the window counts the CPU used by those of them still there at its end; idle means
 * all of them together used less than `maxShare` of one CPU. Ends at once when none of them is left.
 */
export const waitForIdleAll = async (
  pids: () => readonly number[],
  options: { readonly windowMs?: number; readonly maxShare?: number; readonly timeoutMs: number },
) => {
  const windowMs = options.windowMs ?? 200;
  const maxShare = options.maxShare ?? 0.05;
  const started = performance.now();
  while (performance.now() - started < options.timeoutMs) {
    const before = new Map<number, number>();
    for (const pid of pids()) {
      const ticks = cpuTicksOf(pid);
      if (ticks !== undefined) before.set(pid, ticks);
    }
    if (before.size === 0) break;
    await sleep(windowMs);
    let used = 0;
    let left = 0;
    for (const [pid, ticks] of before) {
      const after = cpuTicksOf(pid);
      if (after === undefined) continue;
      left++;
      used += after - ticks;
    }
    if (left === 0) break;
    // Ticks are 10 ms: the share of one CPU used during the window.
    if ((used * 10) / windowMs <= maxShare) return { idle: true, waitedMs: Math.round(performance.now() - started) };
  }
  return { idle: false, waitedMs: Math.round(performance.now() - started) };
};
