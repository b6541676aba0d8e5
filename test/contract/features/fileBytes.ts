import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BlobExists, BlobNotFound, BlobTooLarge, partBytes } from '../../../src/ports/FileBytes.js';
import { StorageFault, type StoreShape } from '../../../src/ports/Store.js';
import { inOddChunks, readAll, seededBytes, storedBytesOf } from '../blobBytes.js';
import type { Contract } from '../contract.js';
import { createAccount, eventsOf, oneToN, replay, submit } from '../fixtures.js';

const mib = 1024 * 1024;

/** 3.5 MiB: three whole parts and a half one. */
const blobSize = 3.5 * mib;

/** A whole part and a half one: what the other features need, and half the bytes (on PostgreSQL, every byte written
 * is flushed again by the next checkpoint, which a failing-disk test's teardown forces). */
const twoParts = partBytes + partBytes / 2;

/** Every blob the store lists, as [id, startedAt]. */
const listed = async (store: StoreShape) => {
  const entries: [string, number][] = [];
  for await (const { blobId, startedAt } of store.files.list()) entries.push([blobId, startedAt]);
  return entries;
};

/** What reading the blob comes to: its bytes, or the error its first read rejected with. */
const readOrError = async (store: StoreShape, blobId: string) => {
  try {
    return (await readAll(store.files.read(blobId))).bytes;
  } catch (error) {
    return error;
  }
};

/** A source of `total` bytes in chunks of `chunk`, counting how many chunks were taken from it. */
const countedSource = (total: number, chunk: number) => {
  const source = { taken: 0, finished: false };
  const chunks = (async function* () {
    try {
      for (let offset = 0; offset < total; offset += chunk) {
        source.taken++;
        yield randomBytes(Math.min(chunk, total - offset));
      }
    } finally {
      source.finished = true;
    }
  })();
  return { source, chunks };
};

/** A source that gives `before` bytes and then fails, as a request body whose client went away. */
async function* failingAfter(before: number, failure: Error): AsyncGenerator<Uint8Array> {
  yield* inOddChunks(randomBytes(before));
  throw failure;
}

/**
 * Uploaded files' bytes (ports/FileBytes.ts): written as they stream in, durable before `write` resolves, read back a
 * part at a time, and never left half-written by a failed write.
 */
export const fileBytesFeatures = ({ open, itWith, factory }: Contract) =>
  describe('file bytes', () => {
    // First: its teardown forces a PostgreSQL checkpoint, which flushes what the tests before it wrote.
    itWith(
      factory.failingDisk,
      'rejects a blob that does not fit on the disk with a StorageFault, and the store writes again once the disk recovers',
      async (failingDisk) => {
        const { store, fail, recover } = await failingDisk();
        await fail();
        try {
          await expect(
            store.files.write('file-full', inOddChunks(randomBytes(2 * mib)), 200 * mib, 1),
          ).rejects.toBeInstanceOf(StorageFault);
        } finally {
          await recover();
        }
        // What the failed write could not remove on a full disk, the sweep removes.
        await store.files.remove('file-full');
        expect(await listed(store)).toEqual([]);
        const bytes = randomBytes(mib + 1);
        expect(await store.files.write('file-full', inOddChunks(bytes), 200 * mib, 2)).toEqual(storedBytesOf(bytes));
        expect((await store.commit({ commands: [createAccount(1)] })).map(eventsOf)).toHaveLength(1);
      },
    );
    it('stores a blob of several parts written in odd-sized chunks and reads back exactly its bytes, a part at a time, with their size and SHA-256', async () => {
      const store = await open();
      const bytes = randomBytes(blobSize);
      const stored = await store.files.write('file-a', inOddChunks(bytes), 200 * mib, 5_000);
      expect(stored).toEqual(storedBytesOf(bytes));
      const read = await readAll(store.files.read('file-a'));
      expect(read.bytes.equals(bytes)).toBe(true);
      // Never the whole blob at once: no piece is larger than a part.
      expect(read.largest).toBeLessThanOrEqual(partBytes);
      expect(await store.files.digest('file-a')).toEqual(stored);
      expect(await listed(store)).toEqual([['file-a', 5_000]]);
    });

    it('stores an empty blob and a blob of exactly its bound, reading back nothing and every byte', async () => {
      const store = await open();
      const empty = await store.files.write('file-empty', inOddChunks(new Uint8Array(0)), 10, 1);
      expect(empty).toEqual({ bytes: 0, sha256: createHash('sha256').digest('hex') });
      expect((await readAll(store.files.read('file-empty'))).bytes).toHaveLength(0);
      // Ends exactly at a part's end.
      const bound = randomBytes(partBytes);
      expect(await store.files.write('file-bound', inOddChunks(bound), bound.length, 2)).toEqual(storedBytesOf(bound));
      expect((await readAll(store.files.read('file-bound'))).bytes.equals(bound)).toBe(true);
    });

    it('refuses a blob larger than its bound with BlobTooLarge, stops reading its source there, and keeps nothing of it', async () => {
      const store = await open();
      const { source, chunks } = countedSource(10 * mib, 256 * 1024);
      const maxBytes = 1.25 * mib;
      const refused = await store.files.write('file-big', chunks, maxBytes, 1_000).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(BlobTooLarge);
      expect((refused as BlobTooLarge).maxBytes).toBe(maxBytes);
      // The chunk that passed the bound was the last one taken, and the source was ended (not left open).
      expect(source.taken).toBe(maxBytes / (256 * 1024) + 1);
      expect(source.finished).toBe(true);
      expect(await listed(store)).toEqual([]);
      expect(await readOrError(store, 'file-big')).toBeInstanceOf(BlobNotFound);
      expect(await store.files.digest('file-big')).toBeUndefined();
    });

    it('keeps nothing of a blob whose source fails part-way (a client that went away), and rethrows that failure', async () => {
      const store = await open();
      const gone = new Error('the client went away');
      await expect(store.files.write('file-cut', failingAfter(twoParts, gone), 200 * mib, 1_000)).rejects.toBe(gone);
      expect(await listed(store)).toEqual([]);
      expect(await readOrError(store, 'file-cut')).toBeInstanceOf(BlobNotFound);
      // The id may be written again once the failed write is gone.
      const bytes = randomBytes(1_000);
      expect(await store.files.write('file-cut', inOddChunks(bytes), 200 * mib, 2_000)).toEqual(storedBytesOf(bytes));
    });

    it('stops writing a blob that is removed while it is written (a sweep), rejecting with BlobNotFound and keeping nothing', async () => {
      const store = await open();
      const bytes = randomBytes(3 * partBytes);
      async function* removedAfterFirstPart() {
        yield bytes.subarray(0, partBytes);
        // The first part is being stored now; the sweep removes the blob before the next is stored.
        await store.files.remove('file-swept');
        yield bytes.subarray(partBytes);
      }
      await expect(store.files.write('file-swept', removedAfterFirstPart(), 200 * mib, 1)).rejects.toBeInstanceOf(
        BlobNotFound,
      );
      expect(await listed(store)).toEqual([]);
      expect(await readOrError(store, 'file-swept')).toBeInstanceOf(BlobNotFound);
    });

    it('reads a range of a blob exactly: within a part, across a part boundary, at its end and cut at it, none past it', async () => {
      const store = await open();
      const bytes = randomBytes(twoParts);
      await store.files.write('file-range', inOddChunks(bytes), 200 * mib, 1);
      const range = async (offset: number, length: number) =>
        Buffer.from(await store.files.readRange('file-range', offset, length));
      const ranges: [number, number][] = [
        [0, 1],
        [5, 1_000],
        [partBytes - 10, 20],
        [partBytes, 7],
        [partBytes - 1, partBytes / 2 + 1],
        [0, twoParts],
        [twoParts - 3, 3],
      ];
      for (const [offset, length] of ranges)
        expect(
          (await range(offset, length)).equals(bytes.subarray(offset, offset + length)),
          `${offset}+${length}`,
        ).toBe(true);
      // A range the blob ends in is cut at its end; one past its end is empty.
      expect((await range(twoParts - 3, 100)).equals(bytes.subarray(twoParts - 3))).toBe(true);
      expect(await range(twoParts, 10)).toHaveLength(0);
      expect(await range(3 * partBytes, 10)).toHaveLength(0);
      await expect(store.files.readRange('file-none', 0, 10)).rejects.toBeInstanceOf(BlobNotFound);
      await store.files.remove('file-range');
      await expect(store.files.readRange('file-range', 0, 10)).rejects.toBeInstanceOf(BlobNotFound);
    });

    it('rejects the read of a blob never written with BlobNotFound, and has no digest for it', async () => {
      const store = await open();
      await expect(store.files.read('file-none')[Symbol.asyncIterator]().next()).rejects.toBeInstanceOf(BlobNotFound);
      expect(await store.files.digest('file-none')).toBeUndefined();
    });

    it('removes a blob whole: it is no longer read, digested or listed, removing it again does nothing, and the others stay', async () => {
      const store = await open();
      const kept = randomBytes(mib + 5);
      await store.files.write('file-gone', inOddChunks(randomBytes(twoParts)), 200 * mib, 1);
      await store.files.write('file-kept', inOddChunks(kept), 200 * mib, 2);
      await store.files.remove('file-gone');
      expect(await readOrError(store, 'file-gone')).toBeInstanceOf(BlobNotFound);
      expect(await store.files.digest('file-gone')).toBeUndefined();
      await store.files.remove('file-gone');
      expect(await listed(store)).toEqual([['file-kept', 2]]);
      expect((await readAll(store.files.read('file-kept'))).bytes.equals(kept)).toBe(true);
    });

    it('fails a read that is under way when its blob is removed, rather than end it early as if the blob were shorter', async () => {
      const store = await open();
      await store.files.write('file-read', inOddChunks(randomBytes(twoParts)), 200 * mib, 1);
      const reading = store.files.read('file-read')[Symbol.asyncIterator]();
      expect((await reading.next()).value).toHaveLength(partBytes);
      await store.files.remove('file-read');
      await expect(reading.next()).rejects.toBeInstanceOf(BlobNotFound);
    });

    it('lists every blob in id order with the time its writing began, also past a page of them', async () => {
      const store = await open();
      const ids = oneToN(300).map((i) => `file-${String(i).padStart(4, '0')}`);
      // Written out of order, a few at a time.
      const shuffled = [...ids].reverse();
      for (let i = 0; i < shuffled.length; i += 20)
        await Promise.all(
          shuffled
            .slice(i, i + 20)
            .map((blobId) => store.files.write(blobId, inOddChunks(Buffer.from(blobId)), 100, Number(blobId.slice(5)))),
        );
      expect(await listed(store)).toEqual(ids.map((blobId) => [blobId, Number(blobId.slice(5))]));
    });

    it('refuses to write a blob id that exists with BlobExists, leaving the stored blob as it was', async () => {
      const store = await open();
      const first = randomBytes(mib + 1);
      await store.files.write('file-once', inOddChunks(first), 200 * mib, 1);
      await expect(store.files.write('file-once', inOddChunks(randomBytes(10)), 200 * mib, 2)).rejects.toBeInstanceOf(
        BlobExists,
      );
      expect((await readAll(store.files.read('file-once'))).bytes.equals(first)).toBe(true);
      expect(await listed(store)).toEqual([['file-once', 1]]);
    });

    it('commits batches as usual, gap-free and whole, while a blob is being written beside them', async () => {
      const store = await open();
      const bytes = randomBytes(twoParts);
      const writing = store.files.write('file-beside', inOddChunks(bytes), 200 * mib, 1);
      const outcomes = await Promise.all(
        oneToN(30).map((b) => store.commit({ commands: [createAccount(b), submit(`req_${b}`, { account: b })] })),
      );
      expect(await writing).toEqual(storedBytesOf(bytes));
      const seqs = outcomes.flatMap((batch) => batch.flatMap((outcome) => eventsOf(outcome).map((event) => event.seq)));
      expect(seqs.sort((a, b) => a - b)).toEqual(oneToN(60));
      expect((await replay(store)).map((event) => event.seq)).toEqual(oneToN(60));
      expect(await store.reads.request('req_30')).toMatchObject({ status: 'waiting' });
      expect((await readAll(store.files.read('file-beside'))).bytes.equals(bytes)).toBe(true);
    });

    itWith(
      factory.reopen,
      'reads a blob back whole after the store is closed and opened again, with its entry',
      async (reopen) => {
        const store = await open();
        const bytes = randomBytes(twoParts);
        const stored = await store.files.write('file-kept', inOddChunks(bytes), 200 * mib, 7_000);
        const reopened = await reopen(store);
        expect((await readAll(reopened.files.read('file-kept'))).bytes.equals(bytes)).toBe(true);
        expect(await reopened.files.digest('file-kept')).toEqual(stored);
        expect(await listed(reopened)).toEqual([['file-kept', 7_000]]);
      },
    );

    itWith(factory.another, 'serves a blob written through one handle through another', async (another) => {
      const writer = await open();
      const reader = await another(writer);
      const bytes = randomBytes(twoParts);
      await writer.files.write('file-shared', inOddChunks(bytes), 200 * mib, 1);
      expect((await readAll(reader.files.read('file-shared'))).bytes.equals(bytes)).toBe(true);
      await reader.files.remove('file-shared');
      expect(await writer.files.digest('file-shared')).toBeUndefined();
    });

    itWith(
      factory.anotherProcess,
      'serves a blob written by another process, and that process reads one written here',
      async (anotherProcess) => {
        const store = await open();
        const other = await anotherProcess(store);
        const theirs = seededBytes('theirs', twoParts);
        expect(await other.writeBlob('file-theirs', 'theirs', twoParts)).toEqual(storedBytesOf(theirs));
        expect((await readAll(store.files.read('file-theirs'))).bytes.equals(theirs)).toBe(true);
        const ours = randomBytes(twoParts);
        await store.files.write('file-ours', inOddChunks(ours), 200 * mib, 1);
        expect(await other.digestBlob('file-ours')).toEqual(storedBytesOf(ours));
      },
    );
  });
