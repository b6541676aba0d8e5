/** Command-line options of `npm run bench` and the sizes each mode runs with. */

export const scenarioNames = [
  'post',
  'get',
  'e2e',
  'storage',
  'pg',
  'batch',
  'cores',
  'deepqueue',
  'webhooks',
  'abuse',
  'fleet',
  'tiers',
] as const;
export type ScenarioName = (typeof scenarioNames)[number];

/** The attacks of `--only=abuse` (issue 40), each also runnable alone as `--only=abuse:<name>`. */
export const abuseAttackNames = [
  'poisoned-lines',
  'file-lists',
  'uploads',
  'disk-floor',
  'large-batches',
  'open-batches',
  'webhooks',
  'big-answers',
  'malformed-forms',
] as const;
export type AbuseAttackName = (typeof abuseAttackNames)[number];

export type Sizes = {
  /** Concurrent connections of every HTTP load (the targets are stated at 64). */
  readonly connections: number;
  /** A/B rounds of the HTTP scenarios: one warm-up per server (none if 0), then `rounds` x (airs, bare). */
  readonly http: { readonly warmupSec: number; readonly roundSec: number; readonly rounds: number };
  readonly e2e: {
    readonly requests: number;
    /** Requests run through each system first, untimed (JIT warm-up, connections, scripts loaded). */
    readonly warmup: number;
    readonly clients: number;
    readonly bullConcurrency: number;
    /** Bound on one timed run, submission and completion together. */
    readonly timeoutSec: number;
  };
  readonly storage: {
    readonly smallRequests: number;
    readonly largeRequests: number;
    /** Events in the log when `airs replay --verify` is timed. */
    readonly verifyEvents: number;
    /** Start-ups timed per data directory (the median is reported). */
    readonly starts: number;
    /** Length of the fixed workload run before RSS is read. */
    readonly memoryWorkloadSec: number;
    /** Distinct stored requests the memory workload polls. */
    readonly pollSample: number;
  };
  readonly batch: {
    /** Lines of the timed batch, and requests of its one-by-one baseline. */
    readonly lines: number;
    /** Lines of the untimed warm-up batch, and requests of the baseline's untimed warm-up. */
    readonly warmup: number;
    /** Concurrent clients of the one-by-one baseline. */
    readonly clients: number;
    /** Pause between two reads of the batch (`GET /v1/batches/{id}`). */
    readonly pollMs: number;
    /** Bound on one timed run (upload to download, or the baseline's requests). */
    readonly timeoutSec: number;
  };
  /** `--only=cores`: `airs serve --processes N` for N = 1, 2, 4, 8 (as far as the CPUs go) against N bare servers. */
  readonly cores: {
    /** Untimed load on each side before its rounds (JIT). */
    readonly warmupSec: number;
    /** POST and GET: `rounds` x (airs, bare), each `roundSec` long. */
    readonly roundSec: number;
    readonly rounds: number;
    /** End to end: an untimed flood of this long first, then `floods` timed ones (the median is reported). */
    readonly floodWarmupSec: number;
    readonly floodSec: number;
    readonly floods: number;
    /** Bound on the drain after a flood. */
    readonly drainTimeoutSec: number;
  };
  /** `--only=deepqueue`: the drain rate of a deep queue against a shallow one (LMDB, one server). */
  readonly deepQueue: { readonly shallow: number; readonly deep: number; readonly timeoutSec: number };
  /** `--only=webhooks` (issue 30): end to end with a webhook endpoint on every account against the same without. */
  readonly webhooks: {
    /** Requests of each timed run (`--webhook-requests=N`), and of the untimed warm-up of each server. */
    readonly requests: number;
    readonly warmup: number;
    readonly clients: number;
    /** Accounts of each server, each with a key (and, on the webhooks side, an endpoint); the load is split evenly. */
    readonly accounts: number;
    /** Timed runs of each side, in the order without, with, with, without, ... */
    readonly rounds: number;
    /** Bound on one timed run, submission and completion together. */
    readonly timeoutSec: number;
    /** Waiting for deliveries after a run: given up when none arrives for `idleSec`, or after `timeoutSec` in all. */
    readonly deliveryIdleSec: number;
    readonly deliveryTimeoutSec: number;
  };
  /**
   * `--only=fleet` (issue 41): end to end over 4 fake replicas of 8 places against 1 fake upstream of 32, each answering
   * after `delayMs`; `rounds` runs of each model of `requests` (after a warm-up of `warmup`), the prompts in `groups`
   * prefix groups; `probeWaves` light-load waves (one request per group) measure the affinity share.
   */
  /**
   * `--only=tiers` (issue 43): `workers` workers of an echo model answering after `callMs`; a flood of `defaults`
   * default requests (two accounts), `flex` flex requests and a batch of `lines` lines; one priority request every
   * `trickleMs` for `trickleSec`.
   */
  readonly tiers: {
    readonly workers: number;
    readonly callMs: number;
    readonly defaults: number;
    readonly flex: number;
    readonly lines: number;
    readonly trickleMs: number;
    readonly trickleSec: number;
  };
  readonly fleet: {
    readonly requests: number;
    readonly warmup: number;
    readonly clients: number;
    readonly delayMs: number;
    readonly rounds: number;
    readonly groups: number;
    readonly probeWaves: number;
    readonly timeoutSec: number;
  };
  /** `--only=abuse` (issue 40): each attack against a fresh server, a bystander account measured throughout. */
  readonly abuse: {
    /** The bystander on the quiet server, before each attack. */
    readonly quietSec: number;
    readonly poisonedLines: {
      readonly accounts: number;
      readonly batchesPerAccount: number;
      readonly depth: number;
      readonly watchSec: number;
    };
    readonly fileLists: { readonly files: number; readonly uploadTimeoutSec: number; readonly listSec: number };
    /** `quotaMiB`: the free plan's `maxFileStorageBytes` for the run (null: its default, 1 GiB). */
    readonly uploads: {
      readonly uploads: number;
      readonly fileMiB: number;
      readonly quotaMiB: number | null;
      readonly timeoutSec: number;
    };
    readonly diskFloor: { readonly uploadMiB: number };
    readonly largeBatches: {
      readonly accounts: number;
      readonly batchesPerAccount: number;
      readonly lines: number;
      readonly promptChars: number;
      readonly watchSec: number;
    };
    readonly openBatches: { readonly accounts: number; readonly batches: number; readonly probeTimeoutSec: number };
    /** `drainSec`: how long the bystander's deliveries are waited for after its last probe. */
    readonly webhooks: {
      readonly accounts: number;
      readonly requestsPerAttacker: number;
      readonly durationSec: number;
      readonly drainSec: number;
    };
    /** `stuckSec`: a batch finalizing this long is stuck (the cancels are tried); `watchSec` bounds the whole watch. */
    readonly bigAnswers: {
      readonly lines: number;
      readonly answerMiB: number;
      readonly watchSec: number;
      readonly stuckSec: number;
    };
  };
};

export type Options = {
  readonly smoke: boolean;
  readonly only: readonly ScenarioName[];
  /** Run the airs servers with `node --cpu-prof` and keep the profiles with the results. */
  readonly cpuProf: boolean;
  /** Keep the temporary data directories. */
  readonly keep: boolean;
  /** Server processes of the airs servers of the HTTP, end-to-end and batch scenarios (`airs serve --processes`). */
  readonly processes: number;
  /** The attacks `--only=abuse` runs (all, or those named as `--only=abuse:<name>`). */
  readonly abuseAttacks: readonly AbuseAttackName[];
  readonly sizes: Sizes;
  /** `--against REV`: build that revision beside this checkout and alternate the two (against.ts). */
  readonly against?: string;
  /** Runs of each build under `--against` (A B A B ...). */
  readonly rounds: number;
  /** Measure the airs built in this checkout instead of this one (what `--against` gives each run). */
  readonly airsRoot?: string;
  /** Write the JSON here instead of test/bench/results/<timestamp>.json. */
  readonly resultsFile?: string;
};

/** What `--against` and `--airs-root` can measure: the scenarios that talk to airs only through its CLI and HTTP. */
export const comparableScenarios: readonly ScenarioName[] = ['post', 'get', 'e2e', 'webhooks'];
/** What `--against` runs without `--only`: the hot path (docs/performance.md's rule). */
export const againstDefault: readonly ScenarioName[] = ['post', 'get', 'e2e'];

const fullSizes: Sizes = {
  connections: 64,
  http: { warmupSec: 3, roundSec: 10, rounds: 5 },
  e2e: { requests: 100_000, warmup: 5_000, clients: 64, bullConcurrency: 50, timeoutSec: 600 },
  storage: {
    smallRequests: 10_000,
    largeRequests: 1_000_000,
    verifyEvents: 1_000_000,
    starts: 3,
    memoryWorkloadSec: 10,
    pollSample: 1_000,
  },
  batch: { lines: 100_000, warmup: 5_000, clients: 64, pollMs: 100, timeoutSec: 600 },
  cores: { warmupSec: 2, roundSec: 3, rounds: 5, floodWarmupSec: 2, floodSec: 8, floods: 3, drainTimeoutSec: 180 },
  deepQueue: { shallow: 10_000, deep: 100_000, timeoutSec: 300 },
  webhooks: {
    requests: 20_000,
    warmup: 2_000,
    clients: 64,
    accounts: 8,
    rounds: 2,
    timeoutSec: 600,
    deliveryIdleSec: 15,
    deliveryTimeoutSec: 600,
  },
  tiers: { workers: 8, callMs: 200, defaults: 2_000, flex: 300, lines: 500, trickleMs: 250, trickleSec: 30 },
  fleet: {
    requests: 1_500,
    warmup: 200,
    clients: 64,
    delayMs: 100,
    rounds: 2,
    groups: 8,
    probeWaves: 10,
    timeoutSec: 120,
  },
  abuse: {
    quietSec: 6,
    poisonedLines: { accounts: 3, batchesPerAccount: 2, depth: 2_000_000, watchSec: 20 },
    fileLists: { files: 5_000, uploadTimeoutSec: 90, listSec: 15 },
    uploads: { uploads: 10, fileMiB: 199, quotaMiB: null, timeoutSec: 300 },
    diskFloor: { uploadMiB: 100 },
    largeBatches: { accounts: 1, batchesPerAccount: 2, lines: 190, promptChars: 990_000, watchSec: 90 },
    openBatches: { accounts: 6, batches: 1_005, probeTimeoutSec: 30 },
    webhooks: { accounts: 20, requestsPerAttacker: 8, durationSec: 20, drainSec: 20 },
    bigAnswers: { lines: 66, answerMiB: 8, watchSec: 120, stuckSec: 15 },
  },
};

const smokeSizes: Sizes = {
  connections: 16,
  http: { warmupSec: 0, roundSec: 0.5, rounds: 1 },
  e2e: { requests: 300, warmup: 30, clients: 16, bullConcurrency: 50, timeoutSec: 60 },
  storage: {
    smallRequests: 100,
    largeRequests: 1_000,
    verifyEvents: 1_500,
    starts: 1,
    memoryWorkloadSec: 0.5,
    pollSample: 50,
  },
  batch: { lines: 2_000, warmup: 200, clients: 16, pollMs: 100, timeoutSec: 120 },
  cores: { warmupSec: 0, roundSec: 0.5, rounds: 1, floodWarmupSec: 0.3, floodSec: 0.5, floods: 1, drainTimeoutSec: 60 },
  deepQueue: { shallow: 200, deep: 1_000, timeoutSec: 60 },
  webhooks: {
    requests: 300,
    warmup: 30,
    clients: 16,
    accounts: 2,
    rounds: 1,
    timeoutSec: 60,
    deliveryIdleSec: 10,
    deliveryTimeoutSec: 60,
  },
  fleet: { requests: 200, warmup: 20, clients: 16, delayMs: 20, rounds: 1, groups: 8, probeWaves: 2, timeoutSec: 60 },
  tiers: { workers: 4, callMs: 50, defaults: 200, flex: 30, lines: 50, trickleMs: 250, trickleSec: 3 },
  abuse: {
    quietSec: 1.5,
    poisonedLines: { accounts: 1, batchesPerAccount: 1, depth: 2_000_000, watchSec: 3 },
    fileLists: { files: 100, uploadTimeoutSec: 30, listSec: 2 },
    uploads: { uploads: 4, fileMiB: 4, quotaMiB: 10, timeoutSec: 30 },
    diskFloor: { uploadMiB: 2 },
    largeBatches: { accounts: 1, batchesPerAccount: 2, lines: 5, promptChars: 20_000, watchSec: 20 },
    openBatches: { accounts: 2, batches: 6, probeTimeoutSec: 5 },
    webhooks: { accounts: 2, requestsPerAttacker: 2, durationSec: 3, drainSec: 5 },
    bigAnswers: { lines: 3, answerMiB: 1, watchSec: 10, stuckSec: 5 },
  },
};

export const usage = `usage: npm run bench -- [--smoke] [--only=${scenarioNames.join(',')}] [--cpu-prof] [--keep]
                         [--against REV [--rounds=N]]
  --smoke      tiny counts, about 30 s: keeps the harness working (figures mean nothing)
  --only=LIST  run only these scenarios (comma-separated); abuse:NAME runs one attack of the abuse scenario
               (${abuseAttackNames.join(', ')})
  --cpu-prof   run the airs servers under node --cpu-prof; profiles land beside the results
  --keep       keep the temporary data directories (printed at the end)
  --processes=N  run the HTTP, end-to-end and batch airs servers as airs serve --processes N (default 1)
  --batch-lines=N  lines of the batch scenario's timed batch (default 100,000; to profile a shorter run)
  --webhook-requests=N  requests of each timed run of the webhooks scenario (default 20,000; a shorter run)
  --against REV  build git revision REV in a temporary worktree and run the scenarios on this build (A) and on that
               one (B) in turn, A B A B ...; prints each figure (rate, CPU per request) per run, the ratio of the
               medians and the spread. Scenarios: ${comparableScenarios.join(', ')} (default --only=${againstDefault.join(',')})
  --rounds=N   runs of each build under --against (default 2, at least 2)
  --airs-root=DIR  measure the airs built in checkout DIR instead of this one (${comparableScenarios.join(', ')} only)
  --results=FILE   write the JSON result to FILE instead of test/bench/results/<timestamp>.json
environment: REDIS_SERVER=/path/to/redis-server (default: redis-server on PATH; without it the BullMQ baseline is skipped)
  the pg scenario (and the batch scenario's PostgreSQL row) needs PostgreSQL's server binaries
  (/usr/lib/postgresql/*/bin; Debian: apt-get install -y postgresql)`;

export const parseOptions = (argv: readonly string[]): Options | string => {
  let smoke = false;
  let cpuProf = false;
  let keep = false;
  let processes = 1;
  let batchLines: number | undefined;
  let webhookRequests: number | undefined;
  let only: ScenarioName[] | undefined;
  let abuseAttacks: AbuseAttackName[] = [...abuseAttackNames];
  let against: string | undefined;
  let rounds = 2;
  let airsRoot: string | undefined;
  let resultsFile: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--smoke') smoke = true;
    else if (arg === '--cpu-prof') cpuProf = true;
    else if (arg === '--keep') keep = true;
    else if (arg.startsWith('--processes=')) {
      processes = Number(arg.slice('--processes='.length));
      if (!Number.isInteger(processes) || processes < 1 || processes > 64)
        return `--processes: expected an integer from 1 to 64\n${usage}`;
    } else if (arg.startsWith('--batch-lines=')) {
      batchLines = Number(arg.slice('--batch-lines='.length));
      if (!Number.isInteger(batchLines) || batchLines < 1)
        return `--batch-lines: expected a positive integer\n${usage}`;
    } else if (arg.startsWith('--webhook-requests=')) {
      webhookRequests = Number(arg.slice('--webhook-requests='.length));
      if (!Number.isInteger(webhookRequests) || webhookRequests < 1 || webhookRequests > 10_000_000)
        return `--webhook-requests: expected an integer from 1 to 10,000,000\n${usage}`;
    } else if (arg.startsWith('--only=')) {
      const given = arg.slice('--only='.length).split(',').filter(Boolean);
      // abuse:NAME picks attacks of the abuse scenario; the scenario runs once, with those.
      const attacks = given.filter((name) => name.startsWith('abuse:')).map((name) => name.slice('abuse:'.length));
      const unknownAttacks = attacks.filter((name) => !(abuseAttackNames as readonly string[]).includes(name));
      if (unknownAttacks.length > 0) return `unknown abuse attack(s): ${unknownAttacks.join(', ')}\n${usage}`;
      if (attacks.length > 0) abuseAttacks = attacks as AbuseAttackName[];
      const names = [...new Set(given.map((name) => (name.startsWith('abuse:') ? 'abuse' : name)))];
      const unknown = names.filter((name) => !(scenarioNames as readonly string[]).includes(name));
      if (unknown.length > 0) return `unknown scenario(s): ${unknown.join(', ')}\n${usage}`;
      only = names as ScenarioName[];
    } else if (arg === '--against' || arg.startsWith('--against=')) {
      against = arg === '--against' ? argv[++i] : arg.slice('--against='.length);
      if (against === undefined || against === '' || against.startsWith('-'))
        return `--against: expected a git revision (a commit, a branch, HEAD~2)\n${usage}`;
    } else if (arg.startsWith('--rounds=')) {
      rounds = Number(arg.slice('--rounds='.length));
      if (!Number.isInteger(rounds) || rounds < 2 || rounds > 100)
        return `--rounds: expected an integer from 2 to 100 (runs of each build)\n${usage}`;
    } else if (arg.startsWith('--airs-root=')) airsRoot = arg.slice('--airs-root='.length);
    else if (arg.startsWith('--results=')) resultsFile = arg.slice('--results='.length);
    else if (arg === '--help' || arg === '-h') return usage;
    else return `unknown option ${arg}\n${usage}`;
  }
  const chosen = only ?? (against === undefined ? [...scenarioNames] : [...againstDefault]);
  if (against !== undefined || airsRoot !== undefined) {
    const other = chosen.filter((name) => !comparableScenarios.includes(name));
    if (other.length > 0)
      return `${against !== undefined ? '--against' : '--airs-root'} measures ${comparableScenarios.join(', ')} only (not ${other.join(', ')}): the others read or seed the store with this checkout's code\n${usage}`;
  }
  let sizes = smoke ? smokeSizes : fullSizes;
  if (batchLines !== undefined) sizes = { ...sizes, batch: { ...sizes.batch, lines: batchLines } };
  if (webhookRequests !== undefined) sizes = { ...sizes, webhooks: { ...sizes.webhooks, requests: webhookRequests } };
  return {
    smoke,
    only: chosen,
    cpuProf,
    keep,
    processes,
    abuseAttacks,
    sizes,
    rounds,
    ...(against === undefined ? {} : { against }),
    ...(airsRoot === undefined ? {} : { airsRoot }),
    ...(resultsFile === undefined ? {} : { resultsFile }),
  };
};
