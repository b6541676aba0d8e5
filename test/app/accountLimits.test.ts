import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/config.js';
import { openBatchesCounter, storedBytesCounter } from '../../src/domain/accountCounters.js';
import { defaultPlans } from '../../src/domain/plans.js';
import { type TestApp, testApps } from '../support/testApp.js';

/** A model that never answers within these tests: a batch of it stays in progress (open). */
const stuck: ModelConfig = { id: 'stuck', provider: 'echo', delayMs: 600_000, timeoutMs: 600_000 };
const plans = {
  ...defaultPlans,
  free: {
    ...defaultPlans.free,
    submitsPerMinute: 10_000,
    pollsPerMinute: 10_000,
    maxOpenCalls: 100,
    maxBatchesInProgress: 2,
    maxFileStorageBytes: 1_000,
  },
};
const config = { models: [stuck], plans, processing: { concurrency: 1, maxAttempts: 3 } };

const line = `${JSON.stringify({
  custom_id: 'c0',
  method: 'POST',
  url: '/v1/chat/completions',
  body: { model: 'stuck', messages: [{ role: 'user', content: 'wait' }] },
})}\n`;

/** Uploads `text` as a batch file through the API (in process). */
const upload = async (app: TestApp, key: string, text: string) => {
  const form = new FormData();
  form.append('purpose', 'batch');
  form.append('file', new Blob([text]), 'lines.jsonl');
  const answer = await app.http.request('http://airs.test/v1/files', {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: form,
  });
  return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
};

const create = async (app: TestApp, key: string, fileId: string) => {
  const answer = await app.call('POST', '/v1/batches', {
    key,
    body: { input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: '24h' },
  });
  return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
};

const errorOf = (answer: { body: Record<string, unknown> }) =>
  answer.body.error as { code: string; type: string; message: string };

/** Blobs kept in the store (uploads whose file was refused leave none). */
const blobs = async (app: TestApp) => {
  let count = 0;
  for await (const _ of app.store.files.list()) count++;
  return count;
};

describe("An account's bounds of batches not ended and of bytes of files kept (plans.<plan>.maxBatchesInProgress, maxFileStorageBytes)", () => {
  const start = testApps();

  it('makes exactly the bound of batches of creates sent at once, answering the others 429 naming maxBatchesInProgress', async () => {
    const app = await start({ config });
    const account = await app.account('free');
    const file = await upload(app, account.key, line);
    expect(file.status).toBe(200);
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => create(app, account.key, file.body.id as string)),
    );
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(2);
    const refused = answers.filter((answer) => answer.status === 429);
    expect(refused).toHaveLength(4);
    for (const answer of refused) {
      expect(errorOf(answer).code).toBe('rate_limited');
      expect(errorOf(answer).type).toBe('rate_limit_error');
      expect(errorOf(answer).message).toMatch(
        /has 2 batches not ended; its plan allows 2 at once \(maxBatchesInProgress\)/,
      );
    }
    expect(await app.store.reads.accountCount(openBatchesCounter(account.accountId))).toBe(2);
    // Cancelled and ended: a place is free again.
    const made = answers.find((answer) => answer.status === 200)?.body.id as string;
    expect((await app.call('POST', `/v1/batches/${made}/cancel`, { key: account.key })).status).toBe(200);
    for (let i = 0; i < 200; i++) {
      if ((await app.store.reads.accountCount(openBatchesCounter(account.accountId))) < 2) break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect((await create(app, account.key, file.body.id as string)).status).toBe(200);
  });

  it('keeps no more bytes than the bound of uploads sent at once, answering the others 429 naming maxFileStorageBytes and keeping none of their bytes', async () => {
    const app = await start({ config });
    const account = await app.account('free');
    const text = line.padEnd(300, ' ');
    const answers = await Promise.all(Array.from({ length: 6 }, () => upload(app, account.key, text)));
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(3);
    const refused = answers.filter((answer) => answer.status === 429);
    expect(refused).toHaveLength(3);
    for (const answer of refused) {
      expect(errorOf(answer).code).toBe('rate_limited');
      expect(errorOf(answer).message).toMatch(/maxFileStorageBytes/);
    }
    expect(await app.store.reads.accountCount(storedBytesCounter(account.accountId))).toBe(900);
    expect(await blobs(app)).toBe(3);
    // Beyond what is left: refused while streaming.
    const tooBig = await upload(app, account.key, 'x'.repeat(101));
    expect(tooBig.status).toBe(429);
    expect(errorOf(tooBig).message).toMatch(/would take the account's files beyond its plan's 1000 bytes/);
    // A file deleted frees its bytes.
    const deleted = answers.find((answer) => answer.status === 200)?.body.id as string;
    expect((await app.call('DELETE', `/v1/files/${deleted}`, { key: account.key })).status).toBe(200);
    expect(await app.store.reads.accountCount(storedBytesCounter(account.accountId))).toBe(600);
    expect((await upload(app, account.key, text)).status).toBe(200);
    // At the bound: refused before any byte is read.
    expect((await upload(app, account.key, 'x'.repeat(100))).status).toBe(200);
    const full = await upload(app, account.key, 'x');
    expect(full.status).toBe(429);
    expect(errorOf(full).message).toMatch(/this account keeps 1000 bytes of files; its plan allows 1000/);
  });
});
