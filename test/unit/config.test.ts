import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, checkModelSecrets, loadConfig } from '../../src/config.js';

const dir = mkdtempSync(join(tmpdir(), 'airs-config-'));
const withFile = (content: string, env: Record<string, string> = {}) => {
  const path = join(dir, `c${Math.random()}.json`);
  writeFileSync(path, content);
  return () => loadConfig({ AIRS_CONFIG: path, ...env }, dir);
};

describe('Configuration', () => {
  it('with no file and no environment gives the contract’s defaults', () => {
    const config = loadConfig({}, dir);
    expect(config).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      requestTtlSeconds: 86_400,
      maxPromptChars: 1_000_000,
      maxBodyBytes: 4 * 1024 * 1024,
      pollIntervalSeconds: 5,
    });
    expect(config.dataDir).toBe(join(dir, 'data'));
    expect(config.models.map((m) => m.id)).toEqual(['echo', 'echo-slow']);
    expect(config.models[1]).toMatchObject({ provider: 'echo', delayMs: 5_000 });
    expect(config.plans.free).toEqual({
      maxKeys: 1,
      submitsPerMinute: 60,
      pollsPerMinute: 600,
      maxQueued: 100,
      maxOpenCalls: 10,
      maxProcessing: 4,
      maxBatchesInProgress: 2,
      maxFileStorageBytes: 1024 ** 3,
      maxFiles: 1_000,
      maxConcurrentUploads: 2,
      maxWebhookEndpoints: 1,
      tokensPerMinute: null,
      tokensPerDay: null,
      tokensPerMonth: null,
      serviceTiers: ['default', 'flex'],
      defaultServiceTier: 'default',
    });
    expect(config.plans.enterprise.maxKeys).toBeNull();
    expect(config.plans.enterprise.serviceTiers).toEqual(['default', 'flex', 'priority']);
    expect(config.processing.promoteAfterSeconds).toBe(60);
    expect(config.dashboard).toEqual({ signupsPerHour: 5, hashingConcurrency: 2, hashingQueue: 4 });
  });
  it('reads ./airs.config.json when AIRS_CONFIG is not set', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'airs-cwd-'));
    writeFileSync(join(cwd, 'airs.config.json'), JSON.stringify({ port: 9000 }));
    expect(loadConfig({}, cwd).port).toBe(9000);
  });
  it('lets PORT, HOST and AIRS_DATA_DIR override the file', () => {
    const config = withFile(JSON.stringify({ port: 9000, host: '0.0.0.0', dataDir: '/x' }), {
      PORT: '9100',
      HOST: '::1',
      AIRS_DATA_DIR: '/y',
    })();
    expect(config).toMatchObject({ port: 9100, host: '::1', dataDir: '/y' });
  });
  it('keeps the store in the data directory unless a PostgreSQL URL is given: --database-url, then AIRS_DATABASE_URL, then store.url', () => {
    expect(loadConfig({}, dir).store).toEqual({});
    const file = JSON.stringify({ store: { url: 'postgres://file@db/airs' } });
    expect(withFile(file)().store).toMatchObject({
      url: 'postgres://file@db/airs',
      urlFrom: expect.stringMatching(/^store\.url in /),
    });
    expect(withFile(file, { AIRS_DATABASE_URL: 'postgresql://env@db/airs' })().store).toEqual({
      url: 'postgresql://env@db/airs',
      urlFrom: 'AIRS_DATABASE_URL',
    });
    const path = join(dir, 'store-flag.json');
    writeFileSync(path, file);
    const flagged = loadConfig({ AIRS_CONFIG: path, AIRS_DATABASE_URL: 'postgres://env@db/airs' }, dir, {
      databaseUrl: 'postgres://flag@db/airs',
    });
    expect(flagged.store).toEqual({ url: 'postgres://flag@db/airs', urlFrom: '--database-url' });
  });
  it('refuses a store URL that is not postgres://, naming where it came from', () => {
    expect(withFile(JSON.stringify({ store: { url: 'mysql://db/airs' } }))).toThrow(
      /store\.url: must be a postgres:\/\//,
    );
    expect(() => loadConfig({ AIRS_DATABASE_URL: '/var/lib/airs' }, dir)).toThrow(
      /^AIRS_DATABASE_URL: must be a postgres:\/\//,
    );
  });
  it('lets the operator raise or lower a plan’s bound of webhook endpoints, and refuses a bound that is not a positive whole number', () => {
    expect(withFile(JSON.stringify({ plans: { starter: { maxWebhookEndpoints: 7 } } }))().plans.starter).toMatchObject({
      maxWebhookEndpoints: 7,
    });
    expect(withFile(JSON.stringify({ plans: { starter: { maxWebhookEndpoints: 0 } } }))).toThrow(
      /plans\.starter\.maxWebhookEndpoints/,
    );
  });
  it('merges plan overrides over the defaults, field by field', () => {
    const config = withFile(JSON.stringify({ plans: { free: { submitsPerMinute: 5 } } }))();
    expect(config.plans.free).toEqual({
      maxKeys: 1,
      submitsPerMinute: 5,
      pollsPerMinute: 600,
      maxQueued: 100,
      maxOpenCalls: 10,
      maxProcessing: 4,
      maxBatchesInProgress: 2,
      maxFileStorageBytes: 1024 ** 3,
      maxFiles: 1_000,
      maxConcurrentUploads: 2,
      maxWebhookEndpoints: 1,
      tokensPerMinute: null,
      tokensPerDay: null,
      tokensPerMonth: null,
      serviceTiers: ['default', 'flex'],
      defaultServiceTier: 'default',
    });
  });
  it.each([
    ['{"port":"x"}', 'port'],
    ['{"plans":{"free":{"submitsPerMinute":-1}}}', 'plans.free.submitsPerMinute'],
    ['{"prot":8080}', 'prot'],
    ['{"models":[{"id":"m","provider":"magic"}]}', 'models[0].provider (model "m"): unknown provider'],
    ['{"models":[{"id":"a","provider":"echo"},{"id":"a","provider":"echo"}]}', 'models'],
    ['{"processing":{"concurrency":0}}', 'processing.concurrency'],
    ['{"requestTtlSeconds":1.5}', 'requestTtlSeconds'],
    ['{"models":[{"id":"echo\\u001b[2J","provider":"echo"}]}', 'models[0].id: must not contain control characters'],
    ['{"dashboard":{"hashingConcurrency":0}}', 'dashboard.hashingConcurrency'],
    ['{"plans":{"free":{"serviceTiers":["gold"]}}}', 'plans.free.serviceTiers'],
    ['{"plans":{"free":{"serviceTiers":["flex","flex"]}}}', 'plans.free.serviceTiers'],
    ['{"processing":{"promoteAfterSeconds":0}}', 'processing.promoteAfterSeconds'],
  ])('refuses %s with a message naming %s', (content, field) => {
    expect(withFile(content)).toThrow(ConfigError);
    expect(withFile(content)).toThrow(field);
  });
  it('refuses a headers timeout longer than the request timeout (the headers are part of the request)', () => {
    const load = withFile(JSON.stringify({ http: { headersTimeoutSeconds: 90 } }));
    expect(load).toThrow(ConfigError);
    expect(load).toThrow('http.headersTimeoutSeconds: must be at most http.requestTimeoutSeconds (60)');
    expect(
      withFile(JSON.stringify({ http: { headersTimeoutSeconds: 90, requestTimeoutSeconds: 120 } }))().http,
    ).toEqual({
      headersTimeoutSeconds: 90,
      requestTimeoutSeconds: 120,
      keepAliveTimeoutSeconds: 10,
      maxConnections: 4_096,
      maxLongCallsShare: 0.5,
      maxPollWaitSeconds: 60,
    });
  });
  it('takes http.maxPollWaitSeconds from 0 (long polls off) to 60, and refuses more or a fraction, naming the key', () => {
    expect(withFile(JSON.stringify({ http: { maxPollWaitSeconds: 0 } }))().http.maxPollWaitSeconds).toBe(0);
    expect(withFile(JSON.stringify({ http: { maxPollWaitSeconds: 25 } }))().http.maxPollWaitSeconds).toBe(25);
    for (const value of [61, 1.5, -1]) {
      const load = withFile(JSON.stringify({ http: { maxPollWaitSeconds: value } }));
      expect(load).toThrow(ConfigError);
      expect(load).toThrow(/maxPollWaitSeconds/);
    }
  });
  it('refuses a file that is not JSON, naming the file', () => {
    expect(withFile('{ port: 1 ')).toThrow(/not valid JSON/);
  });
  it('accepts an openai model and refuses one whose key variable is not set, naming the variable', () => {
    const model = {
      id: 'gpt',
      provider: 'openai',
      baseUrl: 'http://127.0.0.1:11434/v1',
      upstreamModel: 'llama3',
      apiKeyEnv: 'AIRS_TEST_KEY_VAR',
    };
    const content = JSON.stringify({ models: [model] });
    expect(withFile(content, { AIRS_TEST_KEY_VAR: 'sk-x' })().models[0]).toMatchObject({
      ...model,
      timeoutMs: 120_000,
      maxRetries: 2,
    });
    // Only the server needs the key: management commands load the same file without it.
    const withoutKey = withFile(content)();
    expect(() => checkModelSecrets(withoutKey, {})).toThrow(
      /models\[0\]\.apiKeyEnv \(model "gpt"\): environment variable AIRS_TEST_KEY_VAR is not set/,
    );
    expect(() => checkModelSecrets(withoutKey, { AIRS_TEST_KEY_VAR: 'sk-x' })).not.toThrow();
    expect(
      withFile(JSON.stringify({ models: [{ ...model, baseUrl: 'ftp://x' }] }), { AIRS_TEST_KEY_VAR: 'k' }),
    ).toThrow(/models\[0\]\.baseUrl \(model "gpt"\): expected an http\(s\) URL/);
  });
  it('refuses a PORT that is not a port number', () => {
    expect(() => loadConfig({ PORT: 'eighty' }, dir)).toThrow(/PORT/);
  });
});

describe('The worker count (processing.concurrency) by default', () => {
  const vllm = (id: string, maxConcurrency?: number) => ({
    id,
    provider: 'openai',
    baseUrl: 'http://127.0.0.1:8000/v1',
    upstreamModel: id,
    ...(maxConcurrency === undefined ? {} : { maxConcurrency }),
  });
  const workersFor = (file: object) => withFile(JSON.stringify(file))().processing.concurrency;

  it('is what the models can take: a vLLM model of maxConcurrency 256 gets 256 workers, not 16', () => {
    expect(workersFor({ models: [vllm('big', 256)] })).toBe(256);
  });
  it('adds up the models, counting 16 for a model without maxConcurrency', () => {
    expect(workersFor({ models: [vllm('big', 256), vllm('small', 8), vllm('open')] })).toBe(256 + 8 + 16);
    expect(workersFor({ models: [vllm('open')] })).toBe(16);
    // The built-in echo and echo-slow have no maxConcurrency.
    expect(loadConfig({}, dir).processing.concurrency).toBe(32);
  });
  it('stops at 1,024 however much the models could take', () => {
    expect(workersFor({ models: [vllm('a', 1_000), vllm('b', 1_000)] })).toBe(1_024);
    expect(workersFor({ models: [vllm('a', Number.MAX_SAFE_INTEGER), vllm('b', Number.MAX_SAFE_INTEGER)] })).toBe(
      1_024,
    );
  });
  it('gives way to an explicit processing.concurrency, above or below what the models take', () => {
    expect(workersFor({ models: [vllm('big', 256)], processing: { concurrency: 16 } })).toBe(16);
    expect(workersFor({ models: [vllm('a', 1_000), vllm('b', 1_000)], processing: { concurrency: 2_000 } })).toBe(
      2_000,
    );
  });
});
