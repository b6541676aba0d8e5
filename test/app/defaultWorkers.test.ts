import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { defaultPlans } from '../../src/domain/plans.js';
import { submit } from '../support/submit.js';
import { eventually, loggedEvents, startTestApp, type TestApp } from '../support/testApp.js';

/**
 * The worker pool follows the models (issue 29, point 5): with `processing.concurrency` unset, a model whose
 * `maxConcurrency` is 40 gets 40 requests processed at once, not the 16 of the old fixed default. The config is read
 * by `loadConfig` from a file, as `airs serve` reads it.
 */

const generous = { ...defaultPlans, enterprise: { ...defaultPlans.enterprise, submitsPerMinute: 100_000 } };

describe('The worker pool by default', () => {
  let app: TestApp | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'airs-default-workers-'));
  afterEach(async () => {
    await app?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('processes as many requests of a model at once as its maxConcurrency (40), and no more', async () => {
    const path = join(dir, 'airs.config.json');
    // Slow enough that every request submitted is still running when the last is submitted.
    writeFileSync(
      path,
      JSON.stringify({
        models: [{ id: 'wide', provider: 'echo', delayMs: 1_500, maxConcurrency: 40 }],
        processing: { maxAttempts: 1 },
      }),
    );
    const loaded = loadConfig({ AIRS_CONFIG: path }, dir);
    expect(loaded.processing.concurrency).toBe(40);
    app = await startTestApp({ config: { models: loaded.models, processing: loaded.processing, plans: generous } });
    const { key } = await app.account('enterprise');
    const ids = new Set<string>();
    for (let i = 0; i < 50; i++) {
      ids.add(await submit(app, key, { model: 'wide', prompt: `p${i}` }));
    }
    const running = app;
    const completed = async () =>
      (await loggedEvents(running)).filter((event) => event.type === 'RequestCompleted').length;
    await eventually(async () => ((await completed()) === 50 ? true : undefined), 20_000);
    // Replay the log: how many were being processed at once, at most.
    let processing = 0;
    let peak = 0;
    for (const event of await loggedEvents(running)) {
      if (!('reqId' in event) || !ids.has(event.reqId)) continue;
      if (event.type === 'RequestProcessingStarted') peak = Math.max(peak, ++processing);
      if (event.type === 'RequestCompleted' || event.type === 'RequestFailed') processing--;
    }
    expect(peak).toBe(40);
  });
});
