/**
 * The CPU time a server used over a window (user + system, every thread of every process of it), read from /proc.
 *
 * Two sources, the finer one where it is exact:
 * - `/proc/<pid>/task/<tid>/schedstat`, first field: the thread's time on a CPU in nanoseconds. Summed over the
 *   threads (threads born inside the window count whole). A thread that ends inside the window takes its time with
 *   it, so this is used only when every thread seen at the start is still there at the end and the sum is not short
 *   of the process totals below by more than their rounding (a thread born and ended inside the window).
 * - `/proc/<pid>/stat`, utime + stime: the whole process, ended threads included, in clock ticks (1/100 s; each of
 *   the two is rounded down, so a window's figure is within 2 ticks, 20 ms, of the truth). Used for a process in
 *   which a thread ended, and where schedstat cannot be read.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Nanoseconds per clock tick (USER_HZ is 100 on Linux). */
const tickNs = 10_000_000;

/** utime + stime of the whole process (all its threads, ended ones included), in ns; undefined once it is gone. */
const statNsOf = (pid: number): number | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * tickNs;
  } catch {
    return undefined;
  }
};

/** Each thread's time on a CPU, in ns, by thread id; undefined when the process is gone or has no schedstat. */
const threadNsOf = (pid: number): Map<number, number> | undefined => {
  try {
    const threads = new Map<number, number>();
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const ns = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
        if (Number.isFinite(ns)) threads.set(Number(tid), ns);
      } catch {
        // The thread ended between the listing and the read: it is missing from this sample.
      }
    }
    return threads;
  } catch {
    return undefined;
  }
};

type ProcessSample = { readonly statNs: number; readonly threads: Map<number, number> | undefined };

const sampleOf = (pid: number): ProcessSample | undefined => {
  // Threads first: a thread that ends between the two reads is then counted by the stat read, never lost.
  const threads = threadNsOf(pid);
  const statNs = statNsOf(pid);
  return statNs === undefined ? undefined : { statNs, threads };
};

/** `pid` and every process below it (`airs serve --processes N` forks its workers), in the order found. */
export const processTree = (pid: number): number[] => {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // Gone meanwhile.
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++)
    for (const [child, parent] of parentOf) if (parent === tree[i] && !tree.includes(child)) tree.push(child);
  return tree;
};

export type CpuUse = {
  /** User + system CPU seconds the processes used in the window. */
  readonly seconds: number;
  /** Wall-clock seconds of the window. */
  readonly wallSeconds: number;
  /** `schedstat` when every process was read to the nanosecond; `stat` when one of them had to be read in ticks. */
  readonly source: 'schedstat' | 'stat';
  /** Processes read at the end of the window. */
  readonly processes: number;
  /** Processes seen at the start and gone at the end: their time in the window is missing. */
  readonly lost: number;
};

export type CpuMeter = {
  /** What the processes used from the start of the meter until now (the meter goes on: read it again later). */
  read(): CpuUse;
};

/**
 * Starts measuring the CPU time of the processes `pids()` names (asked at the start and at each read: a process
 * that appears later counts from its birth).
 */
export const startCpuMeter = (pids: () => readonly number[]): CpuMeter => {
  const startedAt = performance.now();
  const before = new Map<number, ProcessSample>();
  for (const pid of pids()) {
    const sample = sampleOf(pid);
    if (sample !== undefined) before.set(pid, sample);
  }
  return {
    read: () => {
      let ns = 0;
      let exact = true;
      let processes = 0;
      const seen = new Set<number>();
      for (const pid of pids()) {
        const after = sampleOf(pid);
        if (after === undefined) continue;
        seen.add(pid);
        processes++;
        const start = before.get(pid);
        const threadsBefore = start?.threads;
        const threadsAfter = after.threads;
        const threadEnded =
          threadsBefore !== undefined &&
          threadsAfter !== undefined &&
          [...threadsBefore.keys()].some((tid) => !threadsAfter.has(tid));
        if (threadsAfter === undefined || (start !== undefined && threadsBefore === undefined) || threadEnded) {
          exact = false;
          ns += after.statNs - (start?.statNs ?? 0);
          continue;
        }
        let threadSum = 0;
        for (const [tid, threadNs] of threadsAfter) threadSum += threadNs - (threadsBefore?.get(tid) ?? 0);
        // A thread born and ended inside the window is in neither sample: the process totals (within 2 ticks of the
        // truth) then hold more than the threads do.
        const statSum = after.statNs - (start?.statNs ?? 0);
        if (statSum - threadSum > 2 * tickNs) {
          exact = false;
          ns += statSum;
        } else ns += threadSum;
      }
      const lost = [...before.keys()].filter((pid) => !seen.has(pid)).length;
      return {
        seconds: ns / 1e9,
        wallSeconds: (performance.now() - startedAt) / 1000,
        source: exact ? 'schedstat' : 'stat',
        processes,
        lost,
      };
    },
  };
};

/** Microseconds of CPU per unit of work (request, job), to 0.1 µs; NaN without work. */
export const microsPer = (use: CpuUse, count: number): number =>
  count > 0 ? Math.round((use.seconds / count) * 1e7) / 10 : Number.NaN;
