import { readFileSync, statSync } from 'node:fs';

/**
 * An account that has nothing to do with an attack, measured while it goes on (issue 40): it submits to `/v1/ai` one
 * call at a time, and `/healthz` is asked beside it, each every `everyMs`; the server's resident set and CPU time are
 * read from /proc. The same watcher measures the quiet server first, so that an attack's figures are compared with
 * the same server's in the same run. Used by the abuse tests (which print the figures and assert behaviour) and by
 * `npm run bench -- --only=abuse` (which holds the floors).
 */
export type BystanderFigures = {
  readonly submits: number;
  /** Latencies of the bystander's submits, in ms. */
  readonly submitP50Ms: number;
  readonly submitP99Ms: number;
  readonly submitMaxMs: number;
  /** Answers other than `202`, by status. */
  readonly refused: Readonly<Record<string, number>>;
  readonly healthChecks: number;
  readonly healthP50Ms: number;
  readonly healthP99Ms: number;
  readonly healthMaxMs: number;
  /** The server's resident set at its highest while watched (VmRSS samples), and at the end, in MiB. */
  readonly rssPeakMiB: number;
  readonly rssEndMiB: number;
  /** Its anonymous memory at its highest (RssAnon samples: the heap and buffers, not LMDB's mapped file), in MiB. */
  readonly anonPeakMiB: number;
  /** The server's CPU time while watched, as a share of one core (1 = a whole core all along). */
  readonly cpuShare: number;
  readonly seconds: number;
};

export type BystanderOptions = {
  readonly url: string;
  readonly key: string;
  /** The server process whose memory and CPU are read. */
  readonly pid: number;
  readonly model?: string;
  readonly everyMs?: number;
};

const percentile = (values: readonly number[], share: number): number => {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(share * sorted.length) - 1)] as number;
};

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** A call not answered within this long counts as an error (and its time as this long), so a stop always ends. */
const callTimeoutMs = 30_000;

/** A field of /proc/PID/status in MiB (`VmRSS`, `RssAnon`), or NaN once the process is gone. */
const statusMiB = (pid: number, field: string): number => {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) / 1024;
  } catch {
    return Number.NaN;
  }
};

/** VmRSS of the process in MiB, or NaN once it is gone. */
export const rssMiB = (pid: number): number => statusMiB(pid, 'VmRSS');

/** RssAnon of the process in MiB (what it allocated, not the files it maps), or NaN once it is gone. */
export const anonMiB = (pid: number): number => statusMiB(pid, 'RssAnon');

/** User + system CPU time of the process, in seconds (clock ticks of 10 ms). */
export const cpuSeconds = (pid: number): number => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
};

/** The size of a file in bytes (the LMDB environment, say), 0 when it does not exist. */
export const fileBytes = (path: string): number => {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};

/** Starts watching; `stop` ends the loops and resolves with what was seen. */
export const watchBystander = (options: BystanderOptions) => {
  const everyMs = options.everyMs ?? 100;
  const model = options.model ?? 'echo';
  let watching = true;
  const submits: number[] = [];
  const health: number[] = [];
  const refused: Record<string, number> = {};
  let rssPeak = rssMiB(options.pid);
  let anonPeak = anonMiB(options.pid);
  const startedAt = performance.now();
  const cpuAtStart = cpuSeconds(options.pid);

  const submitting = (async () => {
    let n = 0;
    while (watching) {
      const began = performance.now();
      try {
        const response = await fetch(`${options.url}/v1/ai`, {
          method: 'POST',
          headers: { authorization: `Bearer ${options.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model, prompt: `bystander ${n++}` }),
          signal: AbortSignal.timeout(callTimeoutMs),
        });
        await response.arrayBuffer();
        if (response.status !== 202) refused[response.status] = (refused[response.status] ?? 0) + 1;
      } catch {
        refused.error = (refused.error ?? 0) + 1;
      }
      submits.push(performance.now() - began);
      await sleep(Math.max(0, everyMs - (performance.now() - began)));
    }
  })();
  const checking = (async () => {
    while (watching) {
      const began = performance.now();
      try {
        const response = await fetch(`${options.url}/healthz`, { signal: AbortSignal.timeout(callTimeoutMs) });
        await response.arrayBuffer();
      } catch {
        refused.healthz = (refused.healthz ?? 0) + 1;
      }
      health.push(performance.now() - began);
      await sleep(Math.max(0, everyMs - (performance.now() - began)));
    }
  })();
  const sampling = (async () => {
    while (watching) {
      const rss = rssMiB(options.pid);
      if (rss > rssPeak) rssPeak = rss;
      const anon = anonMiB(options.pid);
      if (anon > anonPeak) anonPeak = anon;
      await sleep(200);
    }
  })();

  return {
    /** Ends the watch and resolves with its figures. */
    stop: async (): Promise<BystanderFigures> => {
      watching = false;
      await Promise.all([submitting, checking, sampling]);
      const seconds = (performance.now() - startedAt) / 1000;
      const rssEnd = rssMiB(options.pid);
      return {
        submits: submits.length,
        submitP50Ms: percentile(submits, 0.5),
        submitP99Ms: percentile(submits, 0.99),
        submitMaxMs: Math.max(...submits),
        refused,
        healthChecks: health.length,
        healthP50Ms: percentile(health, 0.5),
        healthP99Ms: percentile(health, 0.99),
        healthMaxMs: Math.max(...health),
        rssPeakMiB: Math.max(rssPeak, rssEnd),
        rssEndMiB: rssEnd,
        anonPeakMiB: Math.max(anonPeak, anonMiB(options.pid)),
        cpuShare: (cpuSeconds(options.pid) - cpuAtStart) / seconds,
        seconds,
      };
    },
  };
};

/** Watches for `ms`, then resolves with the figures (the quiet server's, before an attack). */
export const watchFor = async (options: BystanderOptions, ms: number): Promise<BystanderFigures> => {
  const watch = watchBystander(options);
  await sleep(ms);
  return watch.stop();
};

/** One line for a test's output or the bench's log: the figures of a watch, rounded. */
export const describeFigures = (label: string, f: BystanderFigures): string =>
  `${label}: ${f.submits} submits p50 ${f.submitP50Ms.toFixed(1)} ms p99 ${f.submitP99Ms.toFixed(1)} ms max ` +
  `${f.submitMaxMs.toFixed(0)} ms, refused ${JSON.stringify(f.refused)}; /healthz p50 ${f.healthP50Ms.toFixed(1)} ms ` +
  `p99 ${f.healthP99Ms.toFixed(1)} ms max ${f.healthMaxMs.toFixed(0)} ms; RSS peak ${f.rssPeakMiB.toFixed(0)} MiB ` +
  `(anonymous ${f.anonPeakMiB.toFixed(0)} MiB) end ${f.rssEndMiB.toFixed(0)} MiB; ` +
  `CPU ${(f.cpuShare * 100).toFixed(0)} % of a core over ${f.seconds.toFixed(1)} s`;
