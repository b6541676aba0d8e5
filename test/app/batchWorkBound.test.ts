import { afterEach, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config.js';
import { systemClock } from '../../src/ports/Clock.js';
import type { StoreShape } from '../../src/ports/Store.js';
import { eventually, startTestApp, type TestApp } from '../support/testApp.js';

/**
 * Issue 40: a process works on at most `batches.maxConcurrentWork` batches at once, taken accounts in turn, and every
 * batch it did not take at once is taken later: all of them end without outside help. On the memory store, through
 * the API and the app's own runner (its timer and the store's changes), with the input files read slowly so that
 * validations last long enough to overlap.
 */

const maxConcurrentWork = 2;
const readPartMs = 20;

/** The store, with every read of a file's bytes counted while it lasts and each part slowed down. */
const watchedReads = () => {
  let open = 0;
  let mostOpen = 0;
  const firstReads: string[] = [];
  const wrap = (store: StoreShape): StoreShape => ({
    ...store,
    files: {
      ...store.files,
      read: (blobId) =>
        (async function* () {
          if (!firstReads.includes(blobId)) firstReads.push(blobId);
          open++;
          mostOpen = Math.max(mostOpen, open);
          try {
            for await (const part of store.files.read(blobId)) {
              await new Promise((resolve) => setTimeout(resolve, readPartMs));
              yield part;
            }
          } finally {
            open--;
          }
        })(),
    },
  });
  return { wrap, mostOpen: () => mostOpen, firstReads: () => [...firstReads] };
};

const jsonl = (prefix: string, lines: number) =>
  Array.from({ length: lines }, (_, i) =>
    JSON.stringify({
      custom_id: `${prefix}-${i}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: 'echo', messages: [{ role: 'user', content: `${prefix} ${i}` }] },
    }),
  ).join('\n');

/** Uploads a batch input file through the API (multipart, as a client sends it); its id. */
const upload = async (app: TestApp, key: string, name: string, text: string): Promise<string> => {
  const form = new FormData();
  form.set('purpose', 'batch');
  form.set('file', new Blob([text], { type: 'application/jsonl' }), `${name}.jsonl`);
  const response = await app.http.request('http://airs.test/v1/files', {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: form,
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { id: string }).id;
};

const createBatch = async (app: TestApp, key: string, inputFileId: string): Promise<string> => {
  const response = await app.call('POST', '/v1/batches', {
    key,
    body: { input_file_id: inputFileId, endpoint: '/v1/chat/completions', completion_window: '24h' },
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { id: string }).id;
};

describe('Batch work bounded per process', () => {
  let app: TestApp | undefined;
  afterEach(async () => {
    await app?.stop();
    app = undefined;
  });

  it('works on at most maxConcurrentWork batches at once, takes the accounts in turn, and ends every batch', async () => {
    const reads = watchedReads();
    app = await startTestApp({
      store: 'memory',
      clock: systemClock,
      wrapStore: reads.wrap,
      config: { batches: { ...defaultConfig().batches, maxConcurrentWork } },
    });
    const running = app;
    // Two accounts of eight batches, one of one: whatever order their ids give them, one account of eight comes
    // before another account in turn.
    const sizes = [8, 8, 1];
    const accounts: { readonly key: string }[] = [];
    for (const _ of sizes) accounts.push(await running.account('enterprise'));
    // Each batch its own file, so that the first read of a file is the start of its batch's validation.
    const filesOf = await Promise.all(
      sizes.map((size, a) =>
        Promise.all(
          Array.from({ length: size }, (_, i) =>
            upload(running, accounts[a]?.key as string, `a${a}-${i}`, jsonl(`a${a}b${i}`, 3)),
          ),
        ),
      ),
    );
    // Made in one turn: one write, before the runner hears of any.
    const batchIds = await Promise.all(
      filesOf.flatMap((files, a) => files.map((fileId) => createBatch(running, accounts[a]?.key as string, fileId))),
    );

    const statuses = await eventually(async () => {
      const found = await Promise.all(batchIds.map((id) => running.store.reads.batch(id)));
      const all = found.map((view) => view?.state.status);
      return all.every((status) => status === 'completed') ? all : undefined;
    }, 60_000);
    expect(statuses).toHaveLength(17);
    console.log(`batch work: at most ${reads.mostOpen()} input files read at once, bound ${maxConcurrentWork}`);
    expect(reads.mostOpen()).toBeGreaterThanOrEqual(1);
    expect(reads.mostOpen()).toBeLessThanOrEqual(maxConcurrentWork);
    // Accounts in turn (a turn: 4 batches): no account's fifth batch starts before every other account's first.
    const order = reads.firstReads();
    const startOf = (fileId: string | undefined) => order.indexOf(fileId as string);
    console.log(
      `batches started, by account: ${order.map((id) => filesOf.findIndex((f) => f.includes(id))).join(' ')}`,
    );
    for (const [a, files] of filesOf.entries()) {
      if (files.length < 5) continue;
      const fifth = startOf(
        files
          .map(startOf)
          .sort((x, y) => x - y)
          .map((i) => order[i])[4],
      );
      for (const [b, others] of filesOf.entries())
        if (b !== a) expect(Math.min(...others.map(startOf))).toBeLessThan(fifth);
    }
  });
});
