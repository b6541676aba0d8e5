import * as Context from 'effect/Context';
import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import { storedBytesCounter } from '../../domain/accountCounters.js';
import { isRefusal } from '../../domain/commands.js';
import {
  AccountLimitReached,
  InvalidRequest,
  NotFound,
  PayloadTooLarge,
  RateLimited,
  type Unavailable,
} from '../../domain/errors.js';
import type { FileState } from '../../domain/file/state.js';
import { couldBeId, idForMessage } from '../../domain/identifiers.js';
import { AppClock } from '../../ports/Clock.js';
import { BlobTooLarge } from '../../ports/FileBytes.js';
import { Ids } from '../../ports/Ids.js';
import { Store, type StoreShape } from '../../ports/Store.js';
import { AppConfig } from '../AppConfig.js';
import type { Principal } from '../Auth.js';
import { Committer, type CommitterShape } from '../Committer.js';

/** What an upload's form says of the file besides its bytes: its purpose and the expiry asked for. */
export type UploadDetails = {
  readonly purpose: string;
  /** `expires_after[seconds]` (anchored at creation), if asked. */
  readonly expiresAfterSeconds?: number | undefined;
};

/**
 * An upload as the route understood it: its name, its bytes as they come, and its details, which a form may send
 * after the file (the official SDKs do): known once the bytes have been read.
 */
export type Upload = {
  readonly filename: string;
  readonly chunks: AsyncIterable<Uint8Array>;
  details(): Promise<UploadDetails | InvalidRequest>;
};

/** Whether a purpose is one an upload may have; the refusal names `purpose`. */
export const purposeProblem = (purpose: string): InvalidRequest | undefined =>
  (uploadPurposes as readonly string[]).includes(purpose)
    ? undefined
    : new InvalidRequest({
        message: `purpose must be one of ${uploadPurposes.join(', ')} (airs runs batches); got ${JSON.stringify(purpose.slice(0, 50))}`,
        details: { param: 'purpose' },
      });

/** A page of an account's files (OpenAI's list: newest first by default, after an id). */
export type FilePage = {
  readonly purpose?: string | undefined;
  readonly after?: string | undefined;
  readonly limit: number;
  readonly order: 'asc' | 'desc';
};

export interface FilesShape {
  /** Stores the bytes durably, then makes the file (its size and digest in the log): resolved once both are. */
  upload(
    principal: Principal,
    upload: Upload,
  ): Promise<FileState | InvalidRequest | PayloadTooLarge | RateLimited | Unavailable>;
  /** The account's file, if it exists. */
  find(principal: Principal, fileId: string): Promise<FileState | NotFound>;
  list(principal: Principal, page: FilePage): Promise<{ readonly files: FileState[]; readonly hasMore: boolean }>;
  /** The file's bytes, streamed. */
  content(
    principal: Principal,
    fileId: string,
  ): Promise<{ file: FileState; bytes: AsyncIterable<Uint8Array> } | NotFound>;
  /** Deletes the file; its bytes go once the deletion is durable. A batch that already read it is not affected. */
  remove(principal: Principal, fileId: string): Promise<FileState | NotFound | Unavailable>;
}

export class Files extends Context.Service<Files, FilesShape>()('airs/Files') {}

/** Purposes an upload may have: airs runs batches only. */
export const uploadPurposes = ['batch'] as const;
/** The longest file name kept (as OpenAI's clients send a path's last part). */
export const maxFilenameChars = 255;

export const createFiles = (deps: {
  readonly store: StoreShape;
  readonly send: CommitterShape['send'];
  readonly now: () => number;
  readonly newId: () => string;
  readonly maxFileBytes: number;
  readonly maxStoredBytes: (principal: Principal) => number;
}): FilesShape => {
  const { store } = deps;
  const notFound = (fileId: string) => new NotFound({ message: `no file ${idForMessage(fileId)}` });
  const own = async (principal: Principal, fileId: string) => {
    if (!couldBeId('file', fileId)) return undefined;
    const file = await store.reads.file(fileId);
    return file === undefined || file.accountId !== principal.accountId ? undefined : file;
  };
  const storageFull = (message: string) => new RateLimited({ message, retryAfterSeconds: 60, budget: 'file_storage' });

  return {
    upload: async (principal, upload) => {
      const limit = deps.maxStoredBytes(principal);
      // The account's bytes kept, as the store counts them (one read): the bytes are streamed up to what is left
      // under the plan's bound; the store decides again, inside the write that makes the file, against its count
      // then (another upload may have taken the room meanwhile, in this process or another).
      const already = await store.reads.accountCount(storedBytesCounter(principal.accountId));
      if (already >= limit)
        return storageFull(
          `this account keeps ${already} bytes of files; its plan allows ${limit} (maxFileStorageBytes): delete files to upload more`,
        );
      const fileId = deps.newId();
      const now = deps.now();
      let stored: { bytes: number; sha256: string };
      try {
        stored = await store.files.write(fileId, upload.chunks, Math.min(deps.maxFileBytes, limit - already), now);
      } catch (error: unknown) {
        if (!(error instanceof BlobTooLarge)) throw error;
        if (error.maxBytes < deps.maxFileBytes)
          return storageFull(
            `this upload would take the account's files beyond its plan's ${limit} bytes (maxFileStorageBytes): delete files to upload more`,
          );
        return new PayloadTooLarge({
          message: `file: a file may have at most ${deps.maxFileBytes} bytes (batches.maxFileBytes)`,
        });
      }
      const details = await upload.details();
      const refused = details instanceof InvalidRequest ? details : purposeProblem(details.purpose);
      if (refused !== undefined || details instanceof InvalidRequest) {
        await store.files.remove(fileId).catch(() => {});
        return refused ?? (details as InvalidRequest);
      }
      const outcome = await deps.send({
        type: 'File',
        fileId,
        command: {
          type: 'CreateFile',
          accountId: principal.accountId,
          purpose: details.purpose,
          filename: upload.filename,
          bytes: stored.bytes,
          sha256: stored.sha256,
          now,
          expiresAt: details.expiresAfterSeconds === undefined ? undefined : now + details.expiresAfterSeconds * 1000,
          maxStoredBytes: limit,
        },
      });
      if (!('events' in outcome)) {
        // Not made (the store could not be written): its bytes name no file; gone now, or swept later.
        await store.files.remove(fileId).catch(() => {});
        // Other uploads took the room while these bytes came: refused inside the write, as the bound says.
        if (outcome instanceof AccountLimitReached) return storageFull(outcome.message);
        if (isRefusal(outcome)) throw outcome;
        return outcome;
      }
      return (await store.reads.file(fileId)) as FileState;
    },
    find: async (principal, fileId) => (await own(principal, fileId)) ?? notFound(fileId),
    list: async (principal, page) => {
      let from: { createdAt: number; id: string } | undefined;
      if (page.after !== undefined) {
        const cursor = await own(principal, page.after);
        // An `after` that names no file of the account starts nowhere: an empty page, as for a deleted cursor.
        if (cursor === undefined) return { files: [], hasMore: false };
        from = { createdAt: cursor.createdAt, id: cursor.fileId };
      }
      const files: FileState[] = [];
      for (;;) {
        const ids = await store.reads.listOf('accountFiles', principal.accountId, {
          from,
          order: page.order,
          limit: page.limit + 1,
        });
        for (const id of ids) {
          const file = await store.reads.file(id);
          if (file === undefined) continue;
          from = { createdAt: file.createdAt, id };
          if (page.purpose !== undefined && file.purpose !== page.purpose) continue;
          if (files.length === page.limit) return { files, hasMore: true };
          files.push(file);
        }
        if (ids.length < page.limit + 1) return { files, hasMore: false };
      }
    },
    content: async (principal, fileId) => {
      const file = await own(principal, fileId);
      return file === undefined ? notFound(fileId) : { file, bytes: store.files.read(fileId) };
    },
    remove: async (principal, fileId) => {
      const file = await own(principal, fileId);
      if (file === undefined) return notFound(fileId);
      const outcome = await deps.send({
        type: 'File',
        fileId,
        command: { type: 'DeleteFile', accountId: principal.accountId, now: deps.now() },
      });
      if (!('events' in outcome)) return isRefusal(outcome) ? notFound(fileId) : outcome;
      // The deletion is durable: the bytes may go (a crash before this leaves them to the sweep), unless a batch not
      // ended yet reads them (a batch that read its file is not affected by its deletion; the sweep takes them later).
      if (await store.reads.isOpenBatchInput(fileId)) return file;
      await store.files.remove(fileId).catch(() => {});
      return file;
    },
  };
};

export const FilesLayer = Layer.effect(
  Files,
  Effect.gen(function* () {
    const config = yield* AppConfig;
    const store = yield* Store;
    const committer = yield* Committer;
    const clock = yield* AppClock;
    const ids = yield* Ids;
    return Files.of(
      createFiles({
        store,
        send: (command) => committer.send(command),
        now: () => clock.now(),
        newId: () => `file-${ids.requestId().slice('req_'.length)}`,
        maxFileBytes: config.batches.maxFileBytes,
        maxStoredBytes: (principal) => config.plans[principal.plan].maxFileStorageBytes,
      }),
    );
  }),
);
