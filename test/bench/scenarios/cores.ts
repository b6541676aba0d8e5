/**
 * `--only=cores` (issue 28, contract section 17): `airs serve --processes N` for N = 1, 2, 4, 8, as far as the CPUs
 * go, each against N bare node:http servers (bareServer.ts) in the same run, on the same CPUs.
 *
 * - airs is started as an operator starts it: the CLI, `airs serve --processes N`, on a fixed port of 127.0.0.1,
 *   one URL for every process. The bench never talks to a process by a port of its own.
 * - Pinning: the servers of N on the first N CPUs this process may use (at most half of them), the load (one
 *   autocannon process) and the bench on the CPUs the largest N leaves, the same for every N; with 2 CPUs, the
 *   servers on the first and the load on the second whatever N.
 * - Every N's servers are up for the whole scenario (idle while another is loaded); each round loads airs then bare
 *   of every N in turn, every server idle before each load, so that the machine's noise falls on every N alike.
 * - POST /v1/ai (durable 202) and GET /v1/ai?req_id= (a completed request): rounds of a fixed time, medians.
 * - End to end: floods of submits for a fixed time, then the drain. Counted in airs's own log, read through the
 *   store API beside the server (the bench only reads): requests queued and completed during the flood (by the time
 *   each event carries), and the time of the last completion; checked against the load's 202s, and a sample of the
 *   requests polled over HTTP.
 * - Which processes served: no log line per call (it would cost the hot path), but what Linux says of each server
 *   process: the TCP connections of the load (not the bench's own calls) it held during each load, looked at every
 *   250 ms, and the CPU time it used. A process served when it held connections of the load and used CPU time. The
 *   bare servers: each has a load of its own, whose answers are counted.
 * - Cost: answers per CPU second of all the processes of a side (a figure the machine's noise moves less).
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { openLmdbStore } from '../../../src/adapters/lmdb/LmdbStore.js';
import { authHeaders, benchConfig, call, completedRequest, createAccountWithKey, sandbox, startAirs } from '../airs.js';
import { type Context, profileFlags, type Row, type ScenarioResult } from '../context.js';
import { type LoadResult, type LoadSpec, runLoad } from '../load.js';
import type { Child } from '../processes.js';
import { cpuTicksOf, waitForIdleAll } from '../procfs.js';
import { markdownTable } from '../report.js';
import { median, ratio, round } from '../stats.js';
import { startBare } from './http.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const prompt = 'hello';

/** A port of 127.0.0.1 free a moment ago: the fixed port an operator would give `serve`. */
const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen({ host: '127.0.0.1', port: 0 }, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

/** The server processes of an `airs serve`: the children of its primary, or the process itself when it has none. */
const serverPids = (rootPid: number): number[] => {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === rootPid) children.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return children.length > 0 ? children.sort((a, b) => a - b) : [rootPid];
};

type TcpRow = { readonly localPort: number; readonly remotePort: number; readonly inode: string };

/** The established TCP connections of this machine (IPv4 and IPv6). */
const establishedTcp = (): TcpRow[] => {
  const rows: TcpRow[] = [];
  const portOf = (address: string) => Number.parseInt(address.slice(address.lastIndexOf(':') + 1), 16);
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || fields[3] !== '01') continue;
      rows.push({
        localPort: portOf(fields[1] as string),
        remotePort: portOf(fields[2] as string),
        inode: fields[9] as string,
      });
    }
  }
  return rows;
};

/** The socket inodes a process holds open. */
const socketInodesOf = (pid: number | 'self'): Set<string> => {
  const inodes = new Set<string>();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
        if (target.startsWith('socket:[')) inodes.add(target.slice(8, -1));
      } catch {
        // Closed meanwhile.
      }
    }
  } catch {
    // Gone.
  }
  return inodes;
};

/**
 * How many connections of the load each process holds: the server ends of the connections to `port`, less those
 * whose client end is this bench process's own (its set-up calls and sample polls through fetch).
 */
const loadConnectionsOf = (pids: readonly number[], port: number): number[] => {
  const rows = establishedTcp();
  const mine = socketInodesOf('self');
  const benchPorts = new Set(rows.filter((r) => r.remotePort === port && mine.has(r.inode)).map((r) => r.localPort));
  const serverEnds = new Set(
    rows.filter((r) => r.localPort === port && !benchPorts.has(r.remotePort)).map((r) => r.inode),
  );
  return pids.map((pid) => [...socketInodesOf(pid)].filter((inode) => serverEnds.has(inode)).length);
};

/**
 * What each server process did during one load: the most connections of the load it held at once (looked at every
 * 250 ms), the CPU time it used, and how long the load lasted.
 */
type ServedBy = {
  readonly pids: number[];
  readonly connections: number[];
  readonly cpuSeconds: number[];
  readonly seconds: number;
};

/** Processes that held connections of the load and used at least 2 % of a CPU over it. */
const servedCount = (served: ServedBy) =>
  served.pids.filter(
    (_, i) => (served.connections[i] as number) > 0 && (served.cpuSeconds[i] as number) >= 0.02 * served.seconds,
  ).length;

/** CPU seconds the processes used from now until `read()` is called (a process gone by then counts 0). */
const cpuMeter = (pids: readonly number[]) => {
  const before = pids.map((pid) => cpuTicksOf(pid) ?? 0);
  return {
    perPid: () =>
      pids.map((pid, i) => {
        const after = cpuTicksOf(pid);
        return after === undefined ? 0 : round((after - (before[i] as number)) / 100, 2);
      }),
    total: () =>
      round(
        pids.reduce((sum, pid, i) => {
          const after = cpuTicksOf(pid);
          return after === undefined ? sum : sum + (after - (before[i] as number)) / 100;
        }, 0),
        2,
      ),
  };
};

/** Runs `load` while watching the server processes of `rootPid` on `port`. */
const watched = async <T>(rootPid: number, port: number, load: () => Promise<T>) => {
  const pids = serverPids(rootPid);
  const meter = cpuMeter([rootPid, ...pids.filter((pid) => pid !== rootPid)]);
  const before = pids.map((pid) => cpuTicksOf(pid) ?? 0);
  const connections: number[] = pids.map(() => 0);
  const started = performance.now();
  let done = false;
  const running = load().finally(() => {
    done = true;
  });
  const watching = (async () => {
    while (!done) {
      await sleep(250);
      if (done) break;
      loadConnectionsOf(pids, port).forEach((count, i) => {
        connections[i] = Math.max(connections[i] as number, count);
      });
    }
  })();
  const result = await running;
  await watching;
  const seconds = round((performance.now() - started) / 1000, 2);
  // A process gone by the end (it died) counts as not having served: no CPU time of its own can be read.
  const cpuSeconds = pids.map((pid, i) => {
    const after = cpuTicksOf(pid);
    return after === undefined ? 0 : round((after - (before[i] as number)) / 100, 2);
  });
  return { result, served: { pids, connections, cpuSeconds, seconds } satisfies ServedBy, cpuSince: meter.total };
};

type Figures = { readonly rps: number; readonly p99Ms: number; readonly non2xx: number; readonly errors: number };
const summarize = (results: readonly LoadResult[]): Figures => ({
  rps: round(median(results.map((r) => r.rps))),
  p99Ms: median(results.map((r) => r.latencyMs.p99)),
  non2xx: results.reduce((n, r) => n + r.non2xx, 0),
  errors: results.reduce((n, r) => n + r.errors + r.timeouts, 0),
});

type Flood = {
  readonly floodSeconds: number;
  /** 202s counted by the load generator. */
  readonly answered202: number;
  /** Requests queued in the log during the flood (by their events' time) and in all (answers still in flight). */
  readonly queuedDuringFlood: number;
  readonly queued: number;
  readonly completedDuringFlood: number;
  readonly completed: number;
  readonly failed: number;
  readonly acceptedPerSec: number;
  readonly completedDuringFloodPerSec: number;
  /** completedDuringFlood / queuedDuringFlood. */
  readonly keepUp: number;
  /** From the end of the flood to the last completion. */
  readonly drainSeconds: number;
  /** Requests / (first submit to last completion). */
  readonly endToEndPerSec: number;
  readonly served: ServedBy;
  readonly polledSample: number;
  /** CPU seconds of every airs process from the flood's start to its last completion, and requests per CPU second. */
  readonly cpuSeconds: number;
  readonly perCpuSecond: number;
};

type PerN = {
  readonly n: number;
  readonly serverCpus: string | undefined;
  readonly loadCpus: string | undefined;
  readonly port: number;
  readonly pids: number[];
  readonly post: { readonly airs: Figures; readonly bare: Figures; readonly bareShares: number[] };
  readonly get: { readonly airs: Figures; readonly bare: Figures; readonly bareShares: number[] };
  readonly served: { readonly post: ServedBy[]; readonly get: ServedBy[] };
  /** The median flood (by end to end/s) of the timed ones, and all of them. */
  readonly flood: Flood;
  readonly floods: Flood[];
  readonly rounds: Record<string, LoadResult[]>;
  /** Server processes that died during the run (the primary's log): none expected. */
  readonly deaths: unknown[];
  /** Answers per CPU second of the servers (medians by `post-airs`, `get-bare`...), and round by round. */
  readonly perCpu: Record<string, number>;
  readonly perCpuRounds: Record<string, number[]>;
};

/** The N to run, the CPUs of the servers for each, and the CPUs of the load (the same for every N). */
export const planCores = (context: Context) => {
  const allowed = context.cpus.allowed;
  if (allowed === undefined || allowed.length < 2)
    return { ns: [1, 2], serverCpus: (_n: number): string | undefined => undefined, loadCpus: undefined };
  const cpus = allowed.length;
  // The servers take at most half the CPUs, the load the rest; N = 2 runs on 2 CPUs too (both on the first).
  const most = Math.max(1, Math.floor(cpus / 2));
  const ns = [1, 2, 4, 8].filter((n) => n <= Math.max(2, most));
  const serversOf = (n: number) => Math.min(n, most);
  const serverCpus = (n: number): string | undefined => allowed.slice(0, serversOf(n)).join(',');
  // The load on the CPUs left by the largest N, whatever N is measured: one load, the same for all.
  const loadCpus = allowed.slice(serversOf(Math.max(...ns))).join(',');
  return { ns, serverCpus, loadCpus };
};

/** One N: `airs serve --processes N` on a fixed port and N bare servers, started; its loads; its figures. */
const setUp = async (context: Context, n: number, serverCpus: string | undefined, loadCpus: string | undefined) => {
  const { cores, connections } = context.options.sizes;
  const box = sandbox(context.workDir, `cores-${n}`);
  const credentials = await createAccountWithKey(box, `cores${n}@example.com`);
  const port = await freePort();
  const airs = await startAirs(box, {
    cpus: serverCpus,
    processes: n,
    port,
    nodeArgs: profileFlags(context, `cores-${n}`),
    timeoutMs: 60_000,
  });
  const children: Child[] = [airs.child];
  const store = openLmdbStore(box.dataDir);
  const refresh = () => (store.reads as { refresh?: () => void }).refresh?.();
  const stop = async () => {
    await store.close();
    await Promise.all(children.map((child) => child.stop('SIGTERM', 20_000)));
  };
  try {
    if (airs.url !== `http://127.0.0.1:${port}`) throw new Error(`airs listens on ${airs.url}, not on port ${port}`);
    const pids = serverPids(airs.child.pid);
    if (pids.length !== n) throw new Error(`airs serve --processes ${n} runs ${pids.length} server processes`);
    const bares = await Promise.all(Array.from({ length: n }, () => startBare(serverCpus)));
    children.push(...bares.map((b) => b.child));
    context.log(
      `  N = ${n}: airs on ${airs.url} (server pids ${pids.join(', ')}), ${n} bare server(s) on ${bares.map((b) => b.url.replace('http://127.0.0.1:', ':')).join(' ')}; CPUs ${serverCpus ?? 'any'}`,
    );
    const reqId = await completedRequest(airs.url, credentials.key);
    const specs = {
      post: (url: string, conns: number): LoadSpec => ({
        url,
        method: 'POST',
        path: '/v1/ai',
        headers: authHeaders(credentials.key, true),
        body: JSON.stringify({ model: 'echo', prompt }),
        connections: conns,
      }),
      get: (url: string, conns: number): LoadSpec => ({
        url,
        method: 'GET',
        path: `/v1/ai?req_id=${encodeURIComponent(reqId)}`,
        headers: authHeaders(credentials.key),
        connections: conns,
      }),
    };
    const share = (i: number) => Math.max(1, Math.floor(connections / n) + (i < connections % n ? 1 : 0));
    const rounds: Record<string, LoadResult[]> = { 'post-airs': [], 'post-bare': [], 'get-airs': [], 'get-bare': [] };
    const served: { post: ServedBy[]; get: ServedBy[] } = { post: [], get: [] };
    const bareShares: { post: number[][]; get: number[][] } = { post: [], get: [] };
    const floods: Flood[] = [];
    /** Answers per CPU second of the servers (all processes of a side), round by round. */
    const perCpu: Record<string, number[]> = { 'post-airs': [], 'post-bare': [], 'get-airs': [], 'get-bare': [] };
    const airsPids = () => [airs.child.pid, ...serverPids(airs.child.pid)];

    const airsRound = async (kind: 'post' | 'get', durationSec: number, timed: boolean) => {
      const a = await watched(airs.child.pid, port, () =>
        runLoad({ ...specs[kind](airs.url, connections), durationSec }, loadCpus),
      );
      // A POST's cost includes processing the request it queued: its CPU is counted until airs is idle again.
      if (kind === 'post') await waitForIdleAll(airsPids, { timeoutMs: cores.drainTimeoutSec * 1000 });
      const cpu = a.cpuSince();
      if (timed) {
        rounds[`${kind}-airs`]?.push(a.result);
        served[kind].push(a.served);
        perCpu[`${kind}-airs`]?.push(round(a.result.requests / cpu));
      }
      return { ...a, cpu };
    };
    const bareRound = async (kind: 'post' | 'get', durationSec: number, timed: boolean) => {
      const meter = cpuMeter(bares.map((bare) => bare.child.pid));
      const b = await Promise.all(
        bares.map((bare, i) => runLoad({ ...specs[kind](bare.url, share(i)), durationSec }, loadCpus)),
      );
      const total = round(
        b.reduce((sum, x) => sum + x.rps, 0),
        1,
      );
      if (timed) {
        rounds[`${kind}-bare`]?.push({
          ...(b[0] as LoadResult),
          rps: total,
          requests: b.reduce((sum, x) => sum + x.requests, 0),
          non2xx: b.reduce((sum, x) => sum + x.non2xx, 0),
          errors: b.reduce((sum, x) => sum + x.errors, 0),
          timeouts: b.reduce((sum, x) => sum + x.timeouts, 0),
          latencyMs: { ...(b[0] as LoadResult).latencyMs, p99: Math.max(...b.map((x) => x.latencyMs.p99)) },
        });
        bareShares[kind].push(b.map((x) => x.requests));
        perCpu[`${kind}-bare`]?.push(round(b.reduce((sum, x) => sum + x.requests, 0) / meter.total()));
      }
      return { total, answers: b.map((x) => x.requests) };
    };

    /** A flood of submits for `seconds`, then the drain, counted in the log. */
    const flood = async (seconds: number): Promise<Flood> => {
      refresh();
      const fromSeq = store.syncReads.lastSeq() + 1;
      const {
        result: load,
        served: floodServed,
        cpuSince,
      } = await watched(airs.child.pid, port, () =>
        runLoad({ ...specs.post(airs.url, connections), durationSec: seconds }, loadCpus),
      );
      if (load.non2xx > 0 || load.errors > 0)
        throw new Error(`flood: ${load.non2xx} non-2xx, ${load.errors} errors: ${JSON.stringify(load.statusCodes)}`);
      const floodEnd = load.finishedAt;
      const tally = { queued: 0, queuedDuring: 0, completed: 0, completedDuring: 0, failed: 0, lastCompletedAt: 0 };
      const sample: string[] = [];
      let next = fromSeq;
      const deadline = performance.now() + cores.drainTimeoutSec * 1000;
      // Answers still in flight when the load stopped may be queued a moment later: wait a little before counting.
      await sleep(300);
      for (;;) {
        refresh();
        for (const event of store.syncReads.events(next)) {
          next = event.seq + 1;
          if (event.type === 'RequestQueued') {
            tally.queued++;
            if (event.at <= floodEnd) tally.queuedDuring++;
            if (sample.length < 20 && tally.queued % 97 === 1 && 'reqId' in event) sample.push(event.reqId);
          } else if (event.type === 'RequestCompleted') {
            tally.completed++;
            if (event.at <= floodEnd) tally.completedDuring++;
            tally.lastCompletedAt = Math.max(tally.lastCompletedAt, event.at);
          } else if (event.type === 'RequestFailed') tally.failed++;
        }
        if (tally.queued > 0 && tally.completed + tally.failed >= tally.queued) break;
        if (performance.now() > deadline)
          throw new Error(`flood: ${tally.completed + tally.failed} of ${tally.queued} settled within the bound`);
        await sleep(100);
      }
      if (tally.failed > 0) throw new Error(`flood: ${tally.failed} requests failed`);
      // Every request of the flood is completed: its whole cost is in.
      const cpu = cpuSince();
      const answered202 = load.statusCodes['202'] ?? 0;
      // The log holds every answered submit, and at most one more per connection (answers cut off by the end).
      if (tally.queued < answered202 || tally.queued > answered202 + connections)
        throw new Error(`flood: the log holds ${tally.queued} new requests, the load counted ${answered202} 202s`);
      for (const id of sample) {
        const polled = await call(airs.url, 'GET', `/v1/ai?req_id=${encodeURIComponent(id)}`, credentials.key);
        if (polled.body.status !== 'completed' || polled.body.response !== prompt)
          throw new Error(`flood: ${id} does not poll as completed: ${JSON.stringify(polled.body)}`);
      }
      const floodSeconds = (load.finishedAt - load.startedAt) / 1000;
      return {
        floodSeconds: round(floodSeconds, 3),
        answered202,
        queuedDuringFlood: tally.queuedDuring,
        queued: tally.queued,
        completedDuringFlood: tally.completedDuring,
        completed: tally.completed,
        failed: tally.failed,
        acceptedPerSec: round(tally.queuedDuring / floodSeconds),
        completedDuringFloodPerSec: round(tally.completedDuring / floodSeconds),
        keepUp: ratio(tally.completedDuring, tally.queuedDuring),
        drainSeconds: round((tally.lastCompletedAt - floodEnd) / 1000, 2),
        endToEndPerSec: round(tally.queued / ((tally.lastCompletedAt - load.startedAt) / 1000)),
        served: floodServed,
        polledSample: sample.length,
        cpuSeconds: cpu,
        perCpuSecond: round(tally.queued / cpu),
      };
    };

    const shares = (rows: number[][]) =>
      rows.reduce(
        (acc, row) => acc.map((x, i) => x + (row[i] ?? 0)),
        Array.from({ length: n }, () => 0),
      );
    const figures = (): PerN => {
      const byRate = [...floods].sort((x, y) => x.endToEndPerSec - y.endToEndPerSec);
      return {
        n,
        serverCpus,
        loadCpus,
        port,
        pids,
        post: {
          airs: summarize(rounds['post-airs'] ?? []),
          bare: summarize(rounds['post-bare'] ?? []),
          bareShares: shares(bareShares.post),
        },
        get: {
          airs: summarize(rounds['get-airs'] ?? []),
          bare: summarize(rounds['get-bare'] ?? []),
          bareShares: shares(bareShares.get),
        },
        served,
        flood: byRate[Math.floor((byRate.length - 1) / 2)] as Flood,
        floods,
        rounds,
        deaths: deaths(),
        perCpu: Object.fromEntries(Object.entries(perCpu).map(([k, v]) => [k, round(median(v))])),
        perCpuRounds: perCpu,
      };
    };
    /** The primary's lines about server processes that died (and were replaced) while the bench ran. */
    const deaths = () =>
      airs.child
        .stderr()
        .split('\n')
        .filter((line) => line.includes('a server process died'))
        .map((line) => {
          try {
            const { pid, code, signal } = JSON.parse(line) as { pid?: number; code?: number; signal?: string };
            return { pid, code, signal };
          } catch {
            return { line };
          }
        });
    /** The server's stderr, less its info lines (what a process that died said). */
    const problems = () =>
      airs.child
        .stderr()
        .split('\n')
        .filter((line) => line.trim() !== '' && !line.includes('"level":30'))
        .slice(-40)
        .join('\n');
    return {
      n,
      deaths,
      problems,
      pids: () => [airs.child.pid, ...serverPids(airs.child.pid), ...bares.map((b) => b.child.pid)],
      airsRound,
      bareRound,
      flood: async (seconds: number, timed: boolean) => {
        const result = await flood(seconds);
        if (timed) floods.push(result);
        return result;
      },
      figures,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
};

type Setup = Awaited<ReturnType<typeof setUp>>;

/**
 * Every N set up at once (the servers of the N not measured stay idle), then the loads interleaved: each round loads
 * airs and bare of every N in turn, so that the machine's noise falls on every N alike. Every server is idle before
 * each load.
 */
const runAll = async (context: Context): Promise<PerN[]> => {
  const { cores } = context.options.sizes;
  const { ns, serverCpus, loadCpus } = planCores(context);
  const setups: Setup[] = [];
  try {
    for (const n of ns) setups.push(await setUp(context, n, serverCpus(n), loadCpus));
    context.log(`  load (one autocannon process) on CPU ${loadCpus ?? 'any'}`);
    const settle = async () => {
      const waited = await waitForIdleAll(() => setups.flatMap((s) => s.pids()), {
        timeoutMs: cores.drainTimeoutSec * 1000,
      });
      if (!waited.idle) context.log(`  servers still busy after ${waited.waitedMs} ms; measuring anyway`);
    };
    for (const kind of ['post', 'get'] as const) {
      if (cores.warmupSec > 0) {
        context.log(`  ${kind}: warm-up, ${cores.warmupSec} s per server`);
        for (const setup of setups) {
          await settle();
          await setup.airsRound(kind, cores.warmupSec, false);
          await settle();
          await setup.bareRound(kind, cores.warmupSec, false);
        }
      }
      for (let r = 1; r <= cores.rounds; r++) {
        for (const setup of setups) {
          await settle();
          const a = await setup.airsRound(kind, cores.roundSec, true);
          await settle();
          const b = await setup.bareRound(kind, cores.roundSec, true);
          context.log(
            `  ${kind} round ${r} N=${setup.n}: airs ${Math.round(a.result.rps)}/s, ${Math.round(a.result.requests / a.cpu)} per CPU-s (served by ${servedCount(a.served)}/${setup.n}: conns ${a.served.connections.join('/')}, cpu ${a.served.cpuSeconds.join('/')} s)  bare ${Math.round(b.total)}/s (${b.answers.join('/')} answers)`,
          );
        }
      }
    }
    if (cores.floodWarmupSec > 0) {
      context.log(`  e2e: warm-up flood, ${cores.floodWarmupSec} s per N`);
      for (const setup of setups) {
        await settle();
        await setup.flood(cores.floodWarmupSec, false);
      }
    }
    for (let r = 1; r <= cores.floods; r++) {
      for (const setup of setups) {
        await settle();
        const f = await setup.flood(cores.floodSec, true);
        context.log(
          `  e2e flood ${r} N=${setup.n}: accepted ${f.acceptedPerSec}/s, completed during the flood ${f.completedDuringFloodPerSec}/s (${f.keepUp} x), last completion ${f.drainSeconds} s after its end; ${f.endToEndPerSec}/s end to end, ${f.perCpuSecond} per CPU-s; served by ${servedCount(f.served)}/${setup.n}`,
        );
      }
    }
    await settle();
    for (const setup of setups) {
      const deaths = setup.deaths();
      if (deaths.length > 0)
        context.log(`  N=${setup.n}: server processes died during the run: ${JSON.stringify(deaths)}`);
    }
    return setups.map((s) => s.figures());
  } finally {
    // SIGTERM: each airs drains and exits (which also writes its --cpu-prof profile).
    await Promise.all(setups.map((s) => s.stop()));
  }
};

/** The figures the floors are about, by name. */
const figuresOf = (r: PerN) => ({
  'POST/s': r.post.airs.rps,
  'GET/s': r.get.airs.rps,
  'flood accepted/s': r.flood.acceptedPerSec,
  'end to end/s': r.flood.endToEndPerSec,
});

/** The same figures round by round (flood by flood), to compare two N loaded one after the other. */
const perRound = (r: PerN): Record<keyof ReturnType<typeof figuresOf>, number[]> => ({
  'POST/s': (r.rounds['post-airs'] ?? []).map((x) => x.rps),
  'GET/s': (r.rounds['get-airs'] ?? []).map((x) => x.rps),
  'flood accepted/s': r.floods.map((f) => f.acceptedPerSec),
  'end to end/s': r.floods.map((f) => f.endToEndPerSec),
});

const readLoad = () => {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  } catch {
    return 'unknown';
  }
};

export const coresScenario = async (context: Context): Promise<ScenarioResult> => {
  const loadBefore = readLoad();
  const results = await runAll(context);
  const loadAfter = readLoad();

  const servedLabel = (list: readonly ServedBy[], n: number) => `${Math.min(...list.map(servedCount))}/${n}`;
  const table = markdownTable(
    [
      'N',
      'CPUs srv/load',
      'POST/s',
      'bare POST/s',
      'GET/s',
      'bare GET/s',
      'flood accepted/s',
      'completed in flood/s',
      'keep-up',
      'drain s',
      'end to end/s',
      'served by (POST/GET/e2e)',
    ],
    results.map((r) => [
      String(r.n),
      `${r.serverCpus ?? 'any'} / ${r.loadCpus ?? 'any'}`,
      String(r.post.airs.rps),
      String(r.post.bare.rps),
      String(r.get.airs.rps),
      String(r.get.bare.rps),
      String(r.flood.acceptedPerSec),
      String(r.flood.completedDuringFloodPerSec),
      `${r.flood.keepUp.toFixed(2)} x`,
      Math.max(0, r.flood.drainSeconds).toFixed(2),
      String(r.flood.endToEndPerSec),
      `${servedLabel(r.served.post, r.n)} / ${servedLabel(r.served.get, r.n)} / ${servedLabel(
        r.floods.map((f) => f.served),
        r.n,
      )}`,
    ]),
  );

  const cpuTable = markdownTable(
    [
      'N',
      'POST per CPU-s',
      'bare POST per CPU-s',
      'GET per CPU-s',
      'bare GET per CPU-s',
      'end to end per CPU-s',
      'airs CPU-s of the median flood',
    ],
    results.map((r) => [
      String(r.n),
      String(r.perCpu['post-airs']),
      String(r.perCpu['post-bare']),
      String(r.perCpu['get-airs']),
      String(r.perCpu['get-bare']),
      String(r.flood.perCpuSecond),
      String(r.flood.cpuSeconds),
    ]),
  );

  const rows: Row[] = [];
  const measured = !context.options.smoke;
  const byN = new Map(results.map((r) => [r.n, r]));
  // Never lower with more processes (contract 17), between each N and the next.
  for (let i = 1; i < results.length; i++) {
    const lower = results[i - 1] as PerN;
    const higher = results[i] as PerN;
    const a = figuresOf(lower);
    const b = figuresOf(higher);
    for (const name of Object.keys(a) as (keyof typeof a)[]) {
      rows.push({
        scenario: `cores: ${name}, N = ${higher.n} against N = ${lower.n}`,
        target: `>= 1.00 x`,
        measured: `${ratio(b[name], a[name]).toFixed(2)} x`,
        detail: `N=${higher.n} ${b[name]}, N=${lower.n} ${a[name]}; round by round ${perRound(higher)
          [name].map((x, j) => ratio(x, perRound(lower)[name][j] ?? Number.NaN).toFixed(2))
          .join(', ')}`,
        met: measured ? b[name] >= a[name] : null,
      });
    }
  }
  // What each request costs the servers' CPUs: the figure the machine's noise moves least (no target).
  for (let i = 1; i < results.length; i++) {
    const lower = results[i - 1] as PerN;
    const higher = results[i] as PerN;
    for (const [name, a, b] of [
      ['POST', lower.perCpu['post-airs'], higher.perCpu['post-airs']],
      ['GET', lower.perCpu['get-airs'], higher.perCpu['get-airs']],
      ['end to end', lower.flood.perCpuSecond, higher.flood.perCpuSecond],
    ] as const) {
      rows.push({
        scenario: `cores: ${name} per server CPU second, N = ${higher.n} against N = ${lower.n}`,
        target: 'none (cost)',
        measured: `${ratio(b ?? Number.NaN, a ?? Number.NaN).toFixed(2)} x`,
        detail: `N=${higher.n} ${b}, N=${lower.n} ${a} answers per CPU second of all airs processes`,
        met: null,
      });
    }
  }
  // The scaling floors, where N = 4 and 8 run on CPUs of their own (a machine of 16 CPUs).
  const one = byN.get(1);
  const four = byN.get(4);
  if (one !== undefined && four !== undefined) {
    for (const name of ['POST/s', 'end to end/s'] as const) {
      const x = ratio(figuresOf(four)[name], figuresOf(one)[name]);
      rows.push({
        scenario: `cores: ${name}, N = 4 against N = 1`,
        target: '>= 2.00 x',
        measured: `${x.toFixed(2)} x`,
        detail: `N=4 ${figuresOf(four)[name]}, N=1 ${figuresOf(one)[name]}`,
        met: measured ? x >= 2 : null,
      });
    }
    for (const r of results.filter((r) => r.n > 1)) {
      const x = ratio(r.get.airs.rps, one.get.airs.rps);
      rows.push({
        scenario: `cores: GET/s, N = ${r.n} against N = 1`,
        target: `>= ${(0.8 * r.n).toFixed(2)} x`,
        measured: `${x.toFixed(2)} x`,
        detail: `N=${r.n} ${r.get.airs.rps}, N=1 ${one.get.airs.rps}`,
        met: measured ? x >= 0.8 * r.n : null,
      });
    }
  }
  // Every process served every load, and every bare server got its share.
  for (const r of results) {
    const all = [...r.served.post, ...r.served.get, ...r.floods.map((f) => f.served)];
    const least = Math.min(...all.map(servedCount));
    const bareLeast = Math.min(...r.post.bareShares, ...r.get.bareShares);
    rows.push({
      scenario: `cores: N = ${r.n}, processes that served each load`,
      target: `${r.n} of ${r.n}, bare too`,
      measured: `${least} of ${r.n}`,
      detail: `airs connections per process (first POST round) ${r.served.post[0]?.connections.join('/')}; bare answers per server (POST) ${r.post.bareShares.join('/')}${r.deaths.length > 0 ? `; server processes died: ${JSON.stringify(r.deaths)}` : ''}`,
      met: least === r.n && bareLeast > 0 && r.deaths.length === 0,
    });
  }

  const { cores, connections } = context.options.sizes;
  const notes = [
    `cores: airs serve --processes N through the CLI on a fixed port of 127.0.0.1 (one URL), echo model, processing.concurrency ${benchConfig.processing.concurrency} per process; ${connections} connections from one autocannon process; N bare node:http servers on ports of their own, the connections split between them.`,
    `cores: every N's servers started at once (idle while another N is loaded); each round loads airs then bare of N = ${results.map((r) => r.n).join(', then ')}, every server idle before each load, so the machine's noise falls on each N alike. POST and GET: ${cores.rounds} round(s) of ${cores.roundSec} s per server after a ${cores.warmupSec} s warm-up each; medians. End to end: ${cores.floods} flood(s) of submits of ${cores.floodSec} s per N after an untimed ${cores.floodWarmupSec} s one, counted in the log (queued and completed by event time, the last completion; the log's count checked against the load's 202s), 20 requests of each flood polled as completed; the median flood (by end to end/s) is shown.`,
    `cores: keep-up = requests completed during the flood / requests queued during it; drain = from the end of the flood to the last completion (0 when the last completion came before the load generator saw its last answer); end to end/s = requests / (first submit to last completion).`,
    `cores: "served by" = server processes that held connections of the load (the bench's own calls left out) and used at least 2 % of a CPU during it (/proc), the fewest over the rounds.`,
    `cores: "per CPU-s" = answers (POST, GET) or requests (end to end) per CPU second used by every process of the side (airs: the primary too); a POST's and a flood's CPU is counted until every request it queued is completed (airs idle again). On a shared machine the throughput follows the CPU share the servers get; the cost per request moves far less.`,
    `cores: load average ${loadBefore} before, ${loadAfter} after (1, 5, 15 min).`,
  ];
  return { name: 'cores', rows, notes, tables: [table, cpuTable], details: { loadBefore, loadAfter, results } };
};
