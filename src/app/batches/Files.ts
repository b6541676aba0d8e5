import * as Context from 'effect/Context';
import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import * as Option from 'effect/Option';
import { isRefusal } from '../../domain/commands.js';
import {
  InvalidRequest,
  NotFound,
  type PayloadTooLarge,
  type RateLimited,
  type Unavailable,
} from '../../domain/errors.js';
import type { FileState } from '../../domain/file/state.js';
import { couldBeId, idForMessage } from '../../domain/identifiers.js';
import { AppClock } from '../../ports/Clock.js';
import { Ids } from '../../ports/Ids.js';
import { Store } from '../../ports/Store.js';
import { AppConfig } from '../AppConfig.js';
import { limitsOf, type Principal } from '../Auth.js';
import { Committer } from '../Committer.js';
import { type ListCall, Metrics } from '../Metrics.js';
import { StorageHealth } from '../StorageHealth.js';
import { type Upload, type UploadDeps, uploadFile } from './upload.js';

export type { Upload, UploadDetails, UploadForm } from './upload.js';

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
  /** Holds room for the upload (upload.ts), stores the bytes durably within it, then makes the file (its size and
   * digest in the log): resolved once both are. */
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

export const createFiles = (
  deps: UploadDeps & {
    /** Counts the rows a list call read (the Metrics service's `listRead`). */
    readonly listRead?: (list: ListCall, rows: number) => void;
  },
): FilesShape => {
  const { store } = deps;
  const notFound = (fileId: string) => new NotFound({ message: `no file ${idForMessage(fileId)}` });
  const own = async (principal: Principal, fileId: string) => {
    if (!couldBeId('file', fileId)) return undefined;
    const file = await store.reads.file(fileId);
    return file === undefined || file.accountId !== principal.accountId ? undefined : file;
  };

  return {
    upload: (principal, upload) => uploadFile(deps, principal, upload),
    find: async (principal, fileId) => (await own(principal, fileId)) ?? notFound(fileId),
    list: async (principal, page) => {
      let from: { createdAt: number; id: string } | undefined;
      let read = 0;
      if (page.after !== undefined) {
        const cursor = await own(principal, page.after);
        read++;
        // An `after` that names no file of the account starts nowhere: an empty page, as for a deleted cursor.
        if (cursor === undefined) return { files: [], hasMore: false };
        from = { createdAt: cursor.createdAt, id: cursor.fileId };
      }
      // One read of the index (of the purpose's own, when filtered): the page and one more, never a scan.
      const ids = await store.reads.listOf('accountFiles', principal.accountId, {
        from,
        order: page.order,
        limit: page.limit + 1,
        purpose: page.purpose,
      });
      const files: FileState[] = [];
      for (const id of ids.slice(0, page.limit)) {
        const file = await store.reads.file(id);
        if (file !== undefined) files.push(file);
      }
      deps.listRead?.('files', read + ids.length + Math.min(ids.length, page.limit));
      return { files, hasMore: ids.length > page.limit };
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
    const health = yield* StorageHealth;
    const metrics = Option.getOrUndefined(yield* Effect.serviceOption(Metrics));
    return Files.of(
      createFiles({
        store,
        send: (command, options) => committer.send(command, options),
        now: () => clock.now(),
        newId: () => `file-${ids.requestId().slice('req_'.length)}`,
        maxFileBytes: config.batches.maxFileBytes,
        uploadMs: config.http.requestTimeoutSeconds * 1000,
        health,
        bounds: (principal) => {
          const plan = limitsOf(config.plans, principal);
          return {
            maxStoredBytes: plan.maxFileStorageBytes,
            maxFiles: plan.maxFiles,
            maxConcurrentUploads: plan.maxConcurrentUploads,
          };
        },
        purposeProblem,
        listRead: metrics?.listRead,
      }),
    );
  }),
);
