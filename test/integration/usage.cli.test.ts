import { afterEach, describe, expect, it } from 'vitest';
import { usageRoute } from '../../src/adapters/http/admin/usageRoute.js';
import { usagePage } from '../../src/app/usage.js';
import type { StoredEvent } from '../../src/domain/events.js';
import type { ManualClock } from '../../src/ports/Clock.js';
import { runCli, type Sandbox, sandbox } from '../support/processes.js';
import { servedAt, submit } from '../support/submit.js';
import { listen, loggedEvents, type TestApp, testApps } from '../support/testApp.js';

const hourMs = 3_600_000;
const dayMs = 24 * hourMs;
const day0 = Date.UTC(2026, 2, 1);

type Sum = { hour: number; accountId: string; model: string; input: number; output: number; requests: number };

/** The log's own account: per hour of completion, account and model, the tokens and count of RequestCompleted. */
const sumsOfLog = (events: readonly StoredEvent[]): Sum[] => {
  const requests = new Map<string, { accountId: string; model: string }>();
  const sums = new Map<string, Sum>();
  for (const event of events) {
    if (event.type === 'RequestQueued') requests.set(event.reqId, { accountId: event.accountId, model: event.model });
    if (event.type !== 'RequestCompleted') continue;
    const { accountId, model } = requests.get(event.reqId) as { accountId: string; model: string };
    const hour = Math.floor(event.at / hourMs) * hourMs;
    const key = `${hour} ${accountId} ${model}`;
    const sum = sums.get(key) ?? { hour, accountId, model, input: 0, output: 0, requests: 0 };
    sum.input += event.inputTokens ?? 0;
    sum.output += event.outputTokens ?? 0;
    sum.requests += 1;
    sums.set(key, sum);
  }
  return [...sums.values()];
};

/** The sums as the usage API's buckets, for a bucket width and grouping (OpenAI's shape). */
const bucketsOf = (sums: readonly Sum[], widthMs: number, byAccount: boolean, byModel: boolean) => {
  const buckets = new Map<number, Map<string, Record<string, unknown>>>();
  for (const sum of sums) {
    const start = Math.floor(sum.hour / widthMs) * widthMs;
    const results = buckets.get(start) ?? new Map();
    buckets.set(start, results);
    const accountId = byAccount ? sum.accountId : null;
    const model = byModel ? sum.model : null;
    const key = `${accountId ?? ''}\u0000${model ?? ''}`;
    const before = (results.get(key) ?? { input_tokens: 0, output_tokens: 0, num_model_requests: 0 }) as Record<
      string,
      number
    >;
    results.set(key, {
      object: 'organization.usage.completions.result',
      input_tokens: (before.input_tokens as number) + sum.input,
      output_tokens: (before.output_tokens as number) + sum.output,
      num_model_requests: (before.num_model_requests as number) + sum.requests,
      account_id: accountId,
      model,
    });
  }
  return [...buckets.entries()]
    .sort(([a], [b]) => a - b)
    .map(([start, results]) => ({
      object: 'bucket',
      start_time: start / 1000,
      end_time: (start + widthMs) / 1000,
      results: [...results.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, result]) => result),
    }));
};

describe('Usage (airs usage, GET /v1/admin/usage) equals the sums of the log', () => {
  const start = testApps();
  let box: Sandbox | undefined;
  afterEach(() => box?.remove());

  /** Two accounts, two models, requests completed over three hours of one day and one of the next, through HTTP. */
  const served = async (): Promise<{ app: TestApp; sums: Sum[]; accounts: string[] }> => {
    const app = await start({
      store: 'lmdb',
      config: {
        models: [
          { id: 'echo', provider: 'echo', delayMs: 0, timeoutMs: 30_000 },
          { id: 'small', provider: 'echo', delayMs: 0, timeoutMs: 30_000 },
        ],
      },
    });
    const clock = app.clock as ManualClock;
    clock.set(day0 + 10 * hourMs);
    const socket = await listen(app);
    const caller = servedAt(socket.url);
    const a = await app.account('scale');
    const b = await app.account('scale');
    const waves: [number, [string, string, string][]][] = [
      [
        0,
        [
          [a.key, 'echo', 'one two three'],
          [a.key, 'small', 'four'],
          [b.key, 'echo', 'five six'],
        ],
      ],
      [
        30 * 60_000,
        [
          [a.key, 'echo', 'seven'],
          [b.key, 'small', 'eight nine ten eleven'],
        ],
      ],
      [
        hourMs,
        [
          [a.key, 'echo', 'twelve thirteen'],
          [b.key, 'echo', 'fourteen'],
        ],
      ],
      [
        dayMs,
        [
          [a.key, 'small', 'a b c d e'],
          [b.key, 'small', 'f'],
        ],
      ],
    ];
    for (const [advance, submissions] of waves) {
      clock.advance(advance);
      for (const [key, model, prompt] of submissions) await submit(caller, key, { model, prompt });
      await app.processor.idle();
    }
    await socket.close();
    const sums = sumsOfLog(await loggedEvents(app));
    expect(sums.reduce((n, sum) => n + sum.requests, 0)).toBe(9);
    return { app, sums, accounts: [a.accountId, b.accountId] };
  };

  it('through the app function and the route, by hour and by day, grouped every way, and across pages', async () => {
    const { app, sums } = await served();
    const since = day0;
    const until = day0 + 3 * dayMs;
    for (const [width, widthMs] of [
      ['1h', hourMs],
      ['1d', dayMs],
    ] as const)
      for (const [groupBy, byAccount, byModel] of [
        [[], false, false],
        [['account_id'], true, false],
        [['model'], false, true],
        [['account_id', 'model'], true, true],
      ] as const) {
        const page = await usagePage(app.store.reads, {
          startMs: since,
          endMs: until,
          width,
          groupBy,
          limit: width === '1h' ? 168 : 31,
        });
        expect(page, `${width} by ${groupBy.join(',')}`).toEqual({
          object: 'page',
          data: bucketsOf(sums, widthMs, byAccount, byModel),
          has_more: false,
          next_page: null,
        });
      }
    // A page at a time (one hour each), as a client follows next_page.
    const pages: unknown[] = [];
    const query = { start_time: String(since / 1000), bucket_width: '1h', group_by: 'account_id,model', limit: '1' };
    let page = await usageRoute(query, app.store);
    for (;;) {
      if (!('data' in page)) throw page;
      pages.push(...page.data);
      if (page.next_page === null) break;
      page = await usageRoute({ ...query, page: page.next_page }, app.store);
    }
    expect(pages).toEqual(bucketsOf(sums, hourMs, true, true));
  });

  it('through airs usage --json and --csv, run as a user runs it beside the running server', async () => {
    const { app, sums } = await served();
    box = sandbox('airs-usage');
    const env = { AIRS_DATA_DIR: app.dataDir };
    const since = new Date(day0).toISOString();
    const until = String((day0 + 3 * dayMs) / 1000);
    const json = await runCli(
      box,
      ['usage', '--since', since, '--until', until, '--group-by', 'account,model', '--bucket', '1h', '--json'],
      { env },
    );
    expect(json.stderr).toBe('');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ object: 'list', data: bucketsOf(sums, hourMs, true, true) });

    const csv = await runCli(box, ['usage', '--since', since, '--until', until, '--group-by', 'model', '--csv'], {
      env,
    });
    expect(csv.code).toBe(0);
    const expected = bucketsOf(sums, dayMs, false, true).flatMap((bucket) =>
      bucket.results.map((r) =>
        [
          new Date(bucket.start_time * 1000).toISOString(),
          new Date(bucket.end_time * 1000).toISOString(),
          '',
          r.model,
          r.input_tokens,
          r.output_tokens,
          r.num_model_requests,
        ].join(','),
      ),
    );
    expect(csv.stdout.trim().split('\n')).toEqual([
      'start_time,end_time,account_id,model,input_tokens,output_tokens,num_model_requests',
      ...expected,
    ]);

    const table = await runCli(box, ['usage', '--since', since, '--until', until], { env });
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(
      /^start_time\s+end_time\s+account_id\s+model\s+input_tokens\s+output_tokens\s+num_model_requests\n/,
    );
    expect(table.stdout.trim().split('\n')).toHaveLength(1 + bucketsOf(sums, dayMs, false, false).length);

    const refused = await runCli(box, ['usage', '--since', since, '--bucket', '1m'], { env });
    expect(refused).toMatchObject({ code: 2, stdout: '' });
    expect(refused.stderr).toContain('--bucket: expected 1h or 1d, got "1m"');
  });
});
