import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { defaultPlans } from '../../src/domain/plans.js';
import { type ManualClock, systemClock } from '../../src/ports/Clock.js';
import { promptAffineTo } from '../support/affinePrompt.js';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';
import { unusedPort } from '../support/ports.js';
import { eventually, startTestApp, type TestApp } from '../support/testApp.js';

/**
 * A strict reader of the Prometheus text format (version 0.0.4): every line is a HELP, a TYPE, an empty line or a
 * sample of a family declared before it; names, label names and escapes as the format allows; each HELP and TYPE once;
 * histogram buckets cumulative, ending at +Inf equal to the count. Throws on anything else.
 */
type Sample = { name: string; labels: Record<string, string>; value: number };
type Family = { name: string; type: string; help: string; samples: Sample[] };

const metricName = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const labelPair = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)/;
const numberText = /^(?:[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]Inf|NaN)$/;

const parseLabels = (text: string, line: string): Record<string, string> => {
  const labels: Record<string, string> = {};
  let rest = text;
  while (rest.length > 0) {
    const match = labelPair.exec(rest);
    if (match === null) throw new Error(`bad labels in: ${line}`);
    const [whole, name, value] = match as unknown as [string, string, string];
    if (name in labels) throw new Error(`label ${name} twice in: ${line}`);
    labels[name] = value.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
    rest = rest.slice(whole.length);
  }
  return labels;
};

const parseExposition = (text: string): Map<string, Family> => {
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  const families = new Map<string, Family>();
  const helps = new Set<string>();
  const familyOf = (sample: string): Family | undefined => {
    const direct = families.get(sample);
    if (direct !== undefined && direct.type !== 'histogram') return direct;
    const base = sample.replace(/_(bucket|sum|count)$/, '');
    const histogram = families.get(base);
    return histogram?.type === 'histogram' && base !== sample ? histogram : undefined;
  };
  for (const line of text.slice(0, -1).split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# HELP ')) {
      const [name, ...help] = line.slice(7).split(' ');
      if (name === undefined || !metricName.test(name) || helps.has(name)) throw new Error(`bad HELP: ${line}`);
      helps.add(name);
      families.set(name, { name, type: 'untyped', help: help.join(' '), samples: [] });
      continue;
    }
    if (line.startsWith('# TYPE ')) {
      const [name, type, extra] = line.slice(7).split(' ');
      const family = families.get(name ?? '');
      if (family === undefined || family.samples.length > 0 || extra !== undefined)
        throw new Error(`bad TYPE: ${line}`);
      if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(type ?? ''))
        throw new Error(`bad type: ${line}`);
      family.type = type as string;
      continue;
    }
    if (line.startsWith('#')) throw new Error(`unexpected comment: ${line}`);
    const match = sampleLine.exec(line);
    if (match === null) throw new Error(`bad sample: ${line}`);
    const [, name, labelText, valueText] = match as unknown as [string, string, string | undefined, string];
    if (!numberText.test(valueText)) throw new Error(`bad value: ${line}`);
    const family = familyOf(name);
    if (family === undefined) throw new Error(`sample of an undeclared family: ${line}`);
    family.samples.push({ name, labels: parseLabels(labelText ?? '', line), value: Number(valueText) });
  }
  for (const family of families.values()) {
    if (family.type !== 'histogram') continue;
    const series = new Map<string, Sample[]>();
    for (const sample of family.samples) {
      const { le, ...rest } = sample.labels;
      const key = JSON.stringify(rest);
      series.set(key, [...(series.get(key) ?? []), sample]);
    }
    for (const [key, samples] of series) {
      const buckets = samples.filter((s) => s.name.endsWith('_bucket'));
      const count = samples.find((s) => s.name.endsWith('_count'));
      const sum = samples.find((s) => s.name.endsWith('_sum'));
      if (count === undefined || sum === undefined) throw new Error(`${family.name}${key}: no _count or _sum`);
      const last = buckets.at(-1);
      if (last?.labels.le !== '+Inf' || last.value !== count.value)
        throw new Error(`${family.name}${key}: +Inf bucket is not the count`);
      buckets.reduce((previous, bucket) => {
        if (bucket.value < previous) throw new Error(`${family.name}${key}: buckets not cumulative`);
        return bucket.value;
      }, 0);
    }
  }
  return families;
};

const scrape = async (app: TestApp, headers?: Record<string, string>) => {
  const response = await app.call('GET', '/metrics', { headers });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await response.text();
  return { text, families: parseExposition(text) };
};

const labelSets = (family: Family | undefined) =>
  [...new Set(family?.samples.map((s) => JSON.stringify(Object.keys(s.labels).sort())))].sort();

const sampleValue = (family: Family | undefined, labels: Record<string, string>, name = family?.name) =>
  family?.samples.find(
    (s) => s.name === name && Object.entries(labels).every(([key, value]) => s.labels[key] === value),
  )?.value;

const appMetricNames = [
  'airs_http_requests_total',
  'airs_http_request_duration_seconds',
  'airs_queue_depth',
  'airs_queue_oldest_age_seconds',
  'airs_queue_scan_truncated',
  'airs_processing_attempts_total',
  'airs_processing_outcomes_total',
  'airs_processing_duration_seconds',
  'airs_requests_expired_total',
  'airs_rate_limit_refusals_total',
  'airs_commit_batch_size',
  'airs_commit_duration_seconds',
  'airs_events_appended_total',
  'airs_tokens_total',
  'airs_long_calls_open',
  'airs_long_calls_max',
  'airs_long_calls_refused_total',
];

describe('GET /metrics', () => {
  let apps: TestApp[] = [];
  afterEach(async () => {
    await Promise.all(apps.map((app) => app.stop()));
    apps = [];
  });
  const start = async (options: Parameters<typeof startTestApp>[0] = {}) => {
    const app = await startTestApp(options);
    apps.push(app);
    return app;
  };

  it('after traffic: every metric, bounded label sets, and no key, prompt, email or id anywhere', async () => {
    const app = await start({
      config: { plans: { ...defaultPlans, free: { ...defaultPlans.free, submitsPerMinute: 3 } } },
    });
    const email = 'metrics-secret-person@example.com';
    const { key, keyId, accountId } = await app.account('free', email);
    const prompts = ['the secret prompt number one', 'zebra-prompt-4711'];
    const reqIds: string[] = [];
    for (const prompt of prompts) {
      const submitted = await app.call('POST', '/v1/ai', { key, body: { model: 'echo', prompt } });
      expect(submitted.status).toBe(202);
      reqIds.push(((await submitted.json()) as { request_id: string }).request_id);
    }
    await app.processor.idle();
    for (const reqId of reqIds) expect((await app.call('GET', `/v1/ai?req_id=${reqId}`, { key })).status).toBe(200);
    // A refusal by the rate limiter (3 submits a minute: this and the one after), a bad key, an unknown id, a wrong
    // method and an unknown path, each with something secret-looking in it.
    expect((await app.call('POST', '/v1/ai', { key, body: { model: 'echo', prompt: prompts[0] } })).status).toBe(202);
    expect((await app.call('POST', '/v1/ai', { key, body: { model: 'echo', prompt: prompts[0] } })).status).toBe(429);
    expect((await app.call('GET', '/v1/ai?req_id=req_x', { key: `${key}x` })).status).toBe(401);
    expect((await app.call('GET', '/v1/ai?req_id=req_unknown_4242', { key })).status).toBe(404);
    expect((await app.call('PUT', '/v1/ai', { key })).status).toBe(405);
    expect((await app.call('GET', `/no/such/${email}`)).status).toBe(404);
    // Expiry: past the TTL the sweeper expires what is left.
    (app.clock as ManualClock).advance(app.config.requestTtlSeconds * 1000 + 1);
    await app.processor.idle();
    expect(await app.sweeper.sweep()).toBeGreaterThan(0);

    const { text, families } = await scrape(app);
    for (const name of appMetricNames) expect(families.has(name), name).toBe(true);
    // Node process metrics (prom-client's defaults) are there too.
    for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds'])
      expect(families.has(name), name).toBe(true);

    const http = families.get('airs_http_requests_total');
    expect(labelSets(http)).toEqual([JSON.stringify(['method', 'route', 'status'])]);
    expect(sampleValue(http, { method: 'POST', route: '/v1/ai', status: '202' })).toBe(3);
    expect(sampleValue(http, { method: 'POST', route: '/v1/ai', status: '429' })).toBe(1);
    expect(sampleValue(http, { method: 'GET', route: '/v1/ai', status: '200' })).toBe(2);
    expect(sampleValue(http, { method: 'GET', route: '/v1/ai', status: '401' })).toBe(1);
    expect(sampleValue(http, { method: 'GET', route: '/v1/ai', status: '404' })).toBe(1);
    expect(sampleValue(http, { method: 'other', route: 'other', status: '405' })).toBe(1);
    expect(sampleValue(http, { method: 'other', route: 'other', status: '404' })).toBe(1);
    for (const sample of http?.samples ?? []) {
      expect(['GET', 'POST', 'other']).toContain(sample.labels.method);
      expect(['/v1/ai', 'other']).toContain(sample.labels.route);
      expect(sample.labels.status).toMatch(/^[1-5]\d\d$|^other$/);
    }
    const latency = families.get('airs_http_request_duration_seconds');
    expect(labelSets(latency)).toEqual(
      [JSON.stringify(['le', 'method', 'route']), JSON.stringify(['method', 'route'])].sort(),
    );
    expect(sampleValue(latency, { method: 'POST', route: '/v1/ai' }, 'airs_http_request_duration_seconds_count')).toBe(
      4,
    );

    expect(sampleValue(families.get('airs_rate_limit_refusals_total'), { plan: 'free', budget: 'submits' })).toBe(1);
    expect(labelSets(families.get('airs_rate_limit_refusals_total'))).toEqual([JSON.stringify(['budget', 'plan'])]);
    expect(sampleValue(families.get('airs_processing_attempts_total'), { model: 'echo' })).toBe(3);
    expect(sampleValue(families.get('airs_processing_outcomes_total'), { model: 'echo', outcome: 'completed' })).toBe(
      3,
    );
    expect(
      sampleValue(
        families.get('airs_processing_duration_seconds'),
        { model: 'echo' },
        'airs_processing_duration_seconds_count',
      ),
    ).toBe(3);
    // Tokens by model and direction: echo counts words (5 + 1 + 5 read, the same written).
    const tokens = families.get('airs_tokens_total');
    expect(labelSets(tokens)).toEqual([JSON.stringify(['direction', 'model'])]);
    expect(sampleValue(tokens, { model: 'echo', direction: 'input' })).toBe(11);
    expect(sampleValue(tokens, { model: 'echo', direction: 'output' })).toBe(11);
    const events = families.get('airs_events_appended_total');
    expect(labelSets(events)).toEqual([JSON.stringify(['type'])]);
    expect(sampleValue(events, { type: 'RequestQueued' })).toBe(3);
    expect(sampleValue(events, { type: 'RequestCompleted' })).toBe(3);
    expect(sampleValue(events, { type: 'RequestExpired' })).toBe(3);
    expect(sampleValue(families.get('airs_requests_expired_total'), {})).toBe(3);
    const batches = sampleValue(families.get('airs_commit_batch_size'), {}, 'airs_commit_batch_size_count') ?? 0;
    expect(batches).toBeGreaterThan(0);
    expect(sampleValue(families.get('airs_commit_duration_seconds'), {}, 'airs_commit_duration_seconds_count')).toBe(
      batches,
    );
    expect(sampleValue(families.get('airs_queue_scan_truncated'), {})).toBe(0);
    // No stream was held or refused; the process's bound is half of its 4,096 connections.
    expect(sampleValue(families.get('airs_long_calls_open'), {})).toBe(0);
    expect(sampleValue(families.get('airs_long_calls_max'), {})).toBe(2048);
    expect(labelSets(families.get('airs_long_calls_refused_total'))).toEqual([JSON.stringify(['reason'])]);
    expect(sampleValue(families.get('airs_long_calls_refused_total'), { reason: 'account_limit' })).toBe(0);

    // Bounded labels only: no key, prompt, email, account, key or request id anywhere in the text.
    const secrets = [key, key.slice(0, 11), keyId, accountId, email, 'metrics-secret-person', ...prompts, ...reqIds];
    for (const secret of secrets) expect(text.includes(secret), `"${secret}" in /metrics`).toBe(false);
    expect(text).not.toMatch(/req_|acct_|key_|sk_|@/);
    // Every label name in the output is one of the bounded ones.
    const labelNames = new Set([...families.values()].flatMap((f) => f.samples.flatMap((s) => Object.keys(s.labels))));
    const bounded = [
      'method',
      'route',
      'status',
      'le',
      'model',
      'outcome',
      'plan',
      'budget',
      'type',
      'direction',
      'reason',
      'tier',
    ];
    const processLabels = ['version', 'major', 'minor', 'patch', 'space', 'kind', 'quantile'];
    for (const name of labelNames) expect([...bounded, ...processLabels]).toContain(name);
  });

  it('queue depth and the age of the oldest queued request, by model, read at scrape time', async () => {
    const app = await start();
    app.processor.stopTakingWork();
    // Every configured model has its series from the first scrape, at 0, so an alert on it has something to read.
    const empty = await scrape(app);
    expect(sampleValue(empty.families.get('airs_queue_depth'), { model: 'echo' })).toBe(0);
    expect(sampleValue(empty.families.get('airs_queue_depth'), { model: 'echo-slow' })).toBe(0);
    const { key } = await app.account('scale');
    for (const model of ['echo', 'echo', 'echo-slow'])
      expect((await app.call('POST', '/v1/ai', { key, body: { model, prompt: 'wait' } })).status).toBe(202);
    (app.clock as ManualClock).advance(7_000);
    const { families } = await scrape(app);
    expect(sampleValue(families.get('airs_queue_depth'), { model: 'echo' })).toBe(2);
    expect(sampleValue(families.get('airs_queue_depth'), { model: 'echo-slow' })).toBe(1);
    expect(sampleValue(families.get('airs_queue_oldest_age_seconds'), { model: 'echo' })).toBe(7);
    expect(labelSets(families.get('airs_queue_depth'))).toEqual([JSON.stringify(['model'])]);
  });

  it('counts each upstream call by model, upstream and outcome: the call moved off a dead upstream as failed_over, the answer as ok', async () => {
    const live = await startFakeOpenAi();
    try {
      const app = await start({
        clock: systemClock,
        config: {
          models: [
            {
              id: 'fleet',
              provider: 'openai',
              upstreamModel: 'm',
              timeoutMs: 5_000,
              upstreams: [
                { name: 'gone', baseUrl: `http://127.0.0.1:${await unusedPort()}/v1`, maxConcurrency: 4 },
                { name: 'live', baseUrl: live.baseUrl, maxConcurrency: 4 },
              ],
            },
          ],
        },
      });
      const { key } = await app.account('scale');
      // A prompt whose affinity lands on the dead upstream first.
      const prompt = promptAffineTo('gone', ['gone', 'live']);
      const created = await app.call('POST', '/v1/ai', { key, body: { model: 'fleet', prompt } });
      const reqId = ((await created.json()) as { request_id: string }).request_id;
      await eventually(async () => ((await app.store.reads.request(reqId))?.status === 'completed' ? true : undefined));
      const calls = (await scrape(app)).families.get('airs_upstream_calls_total');
      expect(calls?.samples.map(({ labels, value }) => ({ ...labels, value }))).toEqual([
        { model: 'fleet', upstream: 'gone', outcome: 'failed_over', value: 1 },
        { model: 'fleet', upstream: 'live', outcome: 'ok', value: 1 },
      ]);
    } finally {
      await live.close();
    }
  });

  it('needs no key and is not rate limited or counted as API traffic, also while the server drains', async () => {
    const app = await start();
    for (let i = 0; i < 5; i++) await scrape(app);
    app.stopAccepting();
    const { families } = await scrape(app);
    expect(app.traffic.inFlight).toBe(0);
    expect(app.traffic.lastArrivalAt).toBe(0);
    expect(families.get('airs_http_requests_total')?.samples).toEqual([]);
    expect((await app.call('GET', '/metrics')).headers.get('ratelimit')).toBeNull();
  });

  it('with metrics.token set, asks for it as a bearer token (401 in the contract’s error shape otherwise)', async () => {
    const token = 'scrape-token-0123456789abcdef';
    const app = await start({ config: { metrics: { token } } });
    for (const headers of [undefined, { authorization: 'Basic abc' }, { authorization: `Bearer ${token}x` }]) {
      const refused = await app.call('GET', '/metrics', { headers });
      expect(refused.status).toBe(401);
      expect(refused.headers.get('www-authenticate')).toBe('Bearer');
      const body = (await refused.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('unauthorized');
      expect(body.error.message).not.toContain(token);
    }
    await scrape(app, { authorization: `Bearer ${token}` });
  });

  it('keeps one registry per app: two apps in one process count apart', async () => {
    const first = await start({ clock: systemClock });
    const second = await start({ clock: systemClock });
    await first.call('GET', '/nowhere');
    await first.call('GET', '/nowhere');
    await second.call('GET', '/nowhere');
    const http = async (app: TestApp) =>
      sampleValue((await scrape(app)).families.get('airs_http_requests_total'), { status: '404' });
    expect(await http(first)).toBe(2);
    expect(await http(second)).toBe(1);
  });

  it('metrics.token comes from the config file, and a weak one is refused', () => {
    const dir = `/tmp/airs-metrics-config-${process.pid}`;
    const write = async (content: unknown) => {
      const { mkdirSync, writeFileSync } = await import('node:fs');
      mkdirSync(dir, { recursive: true });
      writeFileSync(`${dir}/airs.config.json`, JSON.stringify(content));
    };
    return (async () => {
      await write({ metrics: { token: 'a-long-enough-token-123' } });
      expect(loadConfig({}, dir).metrics).toEqual({ token: 'a-long-enough-token-123' });
      await write({});
      expect(loadConfig({}, dir).metrics).toEqual({});
      await write({ metrics: { token: 'short' } });
      expect(() => loadConfig({}, dir)).toThrow(ConfigError);
      expect(() => loadConfig({}, dir)).toThrow(/metrics\.token/);
    })();
  });
});
