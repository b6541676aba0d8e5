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
    maxConcurrentUploads: 10,
  },
};
const config = { models: [stuck], plans, processing: { concurrency: 1, maxAttempts: 3 } };

const line = `${JSON.stringify({
  custom_id: 'c0',
  method: 'POST',
  url: '/v1/chat/completions',
  body: { model: 'stuck', messages: [{ role: 'user', content: 'wait' }] },
})}\n`;

/** A form of `text` as the batch file, as a client sends it: its size is declared (Content-Length). */
const boundary = 'airs-limits-boundary';
const formOf = (text: string) =>
  Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="lines.jsonl"\r\n\r\n${text}\r\n` +
      `--${boundary}--\r\n`,
  );
/** What the form adds to its file's bytes: an upload holds room for its whole declared size. */
const formBytes = formOf('').length;

/** Uploads `text` as a batch file through the API (in process). */
const upload = async (app: TestApp, key: string, text: string) => {
  const body = formOf(text);
  const answer = await app.http.request('http://airs.test/v1/files', {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': String(body.length),
    },
    body,
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

  it('keeps no more bytes than the bound of uploads sent at once, answering the others 429 naming maxFileStorageBytes before reading their bytes', async () => {
    // Room for three uploads of 300 bytes as declared (their forms included), and a little.
    const quota = 3 * (300 + formBytes) + 50;
    const app = await start({
      config: { ...config, plans: { ...plans, free: { ...plans.free, maxFileStorageBytes: quota } } },
    });
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
    // Beyond what is left, as declared: refused before any byte is read, and nothing kept.
    const left = quota - 900;
    const tooBig = await upload(app, account.key, 'x'.repeat(left - formBytes + 1));
    expect(tooBig.status).toBe(429);
    expect(errorOf(tooBig).message).toMatch(
      new RegExp(`this upload \\(${left + 1} bytes\\) would take the account's files beyond its plan's ${quota} bytes`),
    );
    expect(await blobs(app)).toBe(3);
    // Exactly what is left is taken.
    expect((await upload(app, account.key, 'x'.repeat(left - formBytes))).status).toBe(200);
    expect(await app.store.reads.accountCount(storedBytesCounter(account.accountId))).toBe(quota - formBytes);
    // A file deleted frees its bytes.
    const deleted = answers.find((answer) => answer.status === 200)?.body.id as string;
    expect((await app.call('DELETE', `/v1/files/${deleted}`, { key: account.key })).status).toBe(200);
    expect(await app.store.reads.accountCount(storedBytesCounter(account.accountId))).toBe(quota - formBytes - 300);
    expect((await upload(app, account.key, text)).status).toBe(200);
    // Nothing held any more: every upload's reservation ended with it.
    expect(await app.store.reads.uploadsOf(account.accountId)).toEqual([]);
  });
});
