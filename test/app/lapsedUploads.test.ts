import { describe, expect, it } from 'vitest';
import { endLapsedUploads } from '../../src/app/batches/lapsedUploads.js';
import type { Command } from '../../src/domain/commands.js';
import { openStoreOf } from '../support/testStore.js';

const start = (fileId: string, now: number): Command => ({
  type: 'File',
  fileId,
  command: {
    type: 'StartUpload',
    accountId: 'acct_1',
    bytes: 100,
    shrinkToRoom: false,
    now,
    heldUntil: now + 60_000,
    maxStoredBytes: 10_000,
    maxFiles: 10,
    maxConcurrentUploads: 2,
  },
});

describe("the file sweep's end of lapsed uploads", () => {
  it('ends the reservations whose time is up, as lapsed, and leaves those still within their time', async () => {
    const store = openStoreOf('memory');
    await store.commit({ commands: [start('file-a', 1_000), start('file-b', 30_000)] });
    let now = 60_999;
    const deps = {
      store,
      send: async (command: Command) => (await store.commit({ commands: [command] }))[0] as never,
      now: () => now,
    };
    await endLapsedUploads(deps);
    expect((await store.reads.uploadsOf('acct_1')).map((upload) => upload.fileId)).toEqual(['file-a', 'file-b']);
    now = 61_000;
    await endLapsedUploads(deps);
    expect((await store.reads.uploadsOf('acct_1')).map((upload) => upload.fileId)).toEqual(['file-b']);
    const ended = [];
    for await (const event of store.reads.events()) if (event.type === 'FileUploadEnded') ended.push(event);
    expect(ended).toEqual([
      expect.objectContaining({ fileId: 'file-a', accountId: 'acct_1', outcome: 'lapsed', at: 61_000 }),
    ]);
    // A place of the account is free again, as it was to every decision from 61,000 on.
    now = 90_000;
    await endLapsedUploads(deps);
    expect(await store.reads.uploadsOf('acct_1')).toEqual([]);
  });
});
