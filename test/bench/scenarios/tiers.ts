/**
 * `--only=tiers` (issue 43, contract 20): one `airs serve` on LMDB with `workers` workers of an echo model that answers
 * after `callMs`. A flood keeps every worker busy: default requests of two accounts, flex requests of a third, and a
 * batch of chat lines of a fourth. Meanwhile a trickle of priority requests (one every `trickleMs`) arrives from a
 * fifth account. Each request's queue wait (its `RequestQueued` to its first `RequestProcessingStarted`, both on the
 * server's clock, read from the log afterwards) is reported by tier; the floor is priority's p99 within one model
 * call and 100 ms. What the trickle's window leaves waiting is counted, not waited for.
 */
import {
  authHeaders,
  benchConfig,
  createAccountWithKey,
  openAirsLmdbStore,
  type Sandbox,
  sandbox,
  startAirs,
} from '../airs.js';
import type { Context, Figure, Row, ScenarioResult } from '../context.js';
import { round } from '../stats.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Over the model call's own time, what a priority request may wait (the floor). */
const floorSlackMs = 100;

const quantile = (values: readonly number[], q: number): number => {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number;
};

/** Submits one request of `/v1/ai`; its id, or the refusal's status. */
const submit = async (url: string, key: string, tier: string | undefined, prompt: string) => {
  const response = await fetch(`${url}/v1/ai`, {
    method: 'POST',
    headers: authHeaders(key, true),
    body: JSON.stringify(
      tier === undefined ? { model: 'echo', prompt } : { model: 'echo', prompt, service_tier: tier },
    ),
    signal: AbortSignal.timeout(30_000),
  });
  const body = (await response.json()) as { request_id?: string };
  if (response.status !== 202) throw new Error(`POST /v1/ai answered ${response.status}: ${JSON.stringify(body)}`);
  return body.request_id as string;
};

/** Sends `count` submits, `parallel` at a time. */
const flood = async (count: number, parallel: number, one: (i: number) => Promise<unknown>) => {
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      for (let i = next++; i < count; i = next++) await one(i);
    }),
  );
};

/** A batch of `lines` echo chat lines, uploaded (small: one body in memory is fine for a bench's set-up) and made. */
const batchOf = async (url: string, key: string, lines: number) => {
  const text = Array.from({ length: lines }, (_, i) =>
    JSON.stringify({
      custom_id: `line-${i}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: 'echo', messages: [{ role: 'user', content: `batch line ${i}` }] },
    }),
  ).join('\n');
  const form = new FormData();
  form.append('purpose', 'batch');
  form.append('file', new Blob([`${text}\n`], { type: 'application/jsonl' }), 'lines.jsonl');
  const uploaded = await fetch(`${url}/v1/files`, { method: 'POST', headers: authHeaders(key), body: form });
  const file = (await uploaded.json()) as { id?: string };
  if (uploaded.status !== 200) throw new Error(`upload answered ${uploaded.status}: ${JSON.stringify(file)}`);
  const created = await fetch(`${url}/v1/batches`, {
    method: 'POST',
    headers: authHeaders(key, true),
    body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' }),
  });
  if (created.status !== 200) throw new Error(`batch create answered ${created.status}: ${await created.text()}`);
};

type Waits = { readonly started: number[]; readonly waiting: number };

/** Each request's wait by what it is (its tier, or `batch` for a line), from the log. */
const waitsByTier = async (box: Sandbox): Promise<Record<string, Waits>> => {
  const store = await openAirsLmdbStore(box.dataDir);
  try {
    const queued = new Map<string, { at: number; kind: string }>();
    const waits: Record<string, { started: number[]; waiting: number }> = {};
    const of = (kind: string) => {
      waits[kind] ??= { started: [], waiting: 0 };
      return waits[kind];
    };
    for (const event of store.syncReads.events()) {
      if (event.type === 'RequestQueued') {
        const kind = event.batchId !== undefined ? 'batch' : (event.serviceTier ?? 'default');
        queued.set(event.reqId, { at: event.at, kind });
      } else if (event.type === 'RequestProcessingStarted' && event.attempt === 1) {
        const request = queued.get(event.reqId);
        if (request === undefined) continue;
        of(request.kind).started.push(event.at - request.at);
        queued.delete(event.reqId);
      }
    }
    for (const { kind } of queued.values()) of(kind).waiting++;
    return waits;
  } finally {
    await store.close();
  }
};

export const tiersScenario = async (context: Context): Promise<ScenarioResult> => {
  const sizes = context.options.sizes.tiers;
  const config = {
    ...benchConfig,
    models: [{ id: 'echo', provider: 'echo', delayMs: sizes.callMs, timeoutMs: 600_000 }],
    processing: { ...benchConfig.processing, concurrency: sizes.workers },
    // Every built-in plan may use every tier here; the five accounts are enterprise (benchConfig lifts its bounds).
    plans: {
      enterprise: { ...benchConfig.plans.enterprise, maxBatchesInProgress: 10, maxProcessing: null },
    },
  };
  const box = sandbox(context.workDir, 'tiers-airs', config);
  const [first, second, flexer, batcher, urgent] = await Promise.all(
    ['default-a', 'default-b', 'flex', 'batch', 'priority'].map((name) =>
      createAccountWithKey(box, `${name}@example.com`),
    ),
  );
  const airs = await startAirs(box, { cpus: context.cpus.server });
  const notes: string[] = [];
  let priorityIds: string[] = [];
  try {
    const { url } = airs;
    // The flood: default work of two accounts, flex work, and a batch, all queued before the trickle starts.
    await flood(sizes.defaults, 16, (i) =>
      submit(url, (i % 2 === 0 ? first : second)?.key as string, i % 4 === 1 ? 'auto' : undefined, `default ${i}`),
    );
    await flood(sizes.flex, 16, (i) => submit(url, flexer?.key as string, 'flex', `flex ${i}`));
    await batchOf(url, batcher?.key as string, sizes.lines);
    // Let the batch's lines reach the queue and the workers fill up.
    await sleep(1_000);
    const trickle: Promise<string>[] = [];
    const until = performance.now() + sizes.trickleSec * 1000;
    for (let i = 0; performance.now() < until; i++) {
      trickle.push(submit(url, urgent?.key as string, 'priority', `priority ${i}`));
      await sleep(sizes.trickleMs);
    }
    priorityIds = await Promise.all(trickle);
    // The last priority request's start, at most one call after it arrived.
    await sleep(sizes.callMs + 500);
  } finally {
    await airs.child.stop('SIGTERM', 20_000);
  }
  const waits = await waitsByTier(box);
  const line = (kind: string) => {
    const of = waits[kind] ?? { started: [], waiting: 0 };
    return {
      started: of.started.length,
      waiting: of.waiting,
      p50: quantile(of.started, 0.5),
      p99: quantile(of.started, 0.99),
      max: Math.max(...of.started),
    };
  };
  const priority = line('priority');
  const defaults = line('default');
  const flex = line('flex');
  const batch = line('batch');
  const floorMs = sizes.callMs + floorSlackMs;
  const describe = (of: ReturnType<typeof line>) =>
    of.started === 0
      ? `none started, ${of.waiting} still waiting at the end`
      : `p50 ${round(of.p50)} ms, p99 ${round(of.p99)} ms; ${of.started} started, ${of.waiting} still waiting at the end`;
  if (priority.started < priorityIds.length)
    notes.push(`${priorityIds.length - priority.started} priority requests had not started when the run ended`);
  const busy = defaults.waiting + flex.waiting + batch.waiting > 0;
  if (!busy) notes.push('the flood drained before the trickle ended: the workers were not all busy throughout');
  const rows: Row[] = [
    {
      scenario: `Tiers: priority queue wait under a flood (${sizes.workers} workers, ${sizes.callMs} ms calls)`,
      target: `p99 <= ${floorMs} ms (one call + ${floorSlackMs} ms)`,
      measured: `p99 ${round(priority.p99)} ms`,
      detail: `${describe(priority)}; max ${round(priority.max)} ms`,
      met:
        context.options.smoke || !busy
          ? null
          : priority.p99 <= floorMs && priority.started === priorityIds.length && priority.started > 0,
    },
    {
      scenario: 'Tiers: default queue wait beside it',
      target: 'none (reported)',
      measured: `p50 ${round(defaults.p50)} ms`,
      detail: describe(defaults),
      met: null,
    },
    {
      scenario: 'Tiers: flex and batch lines beside it',
      target: 'none (reported)',
      measured: flex.started === 0 ? 'flex: none started' : `flex p50 ${round(flex.p50)} ms`,
      detail: `flex ${describe(flex)}; batch lines ${describe(batch)}`,
      met: null,
    },
  ];
  const figures: Figure[] = [
    { key: 'tiers.priority.p99', label: 'tiers: priority wait p99 (ms)', value: priority.p99, better: 'lower' },
    { key: 'tiers.default.p50', label: 'tiers: default wait p50 (ms)', value: defaults.p50, better: 'lower' },
  ];
  return { name: 'tiers', rows, notes, figures, details: { sizes, priority, defaults, flex, batch } };
};
