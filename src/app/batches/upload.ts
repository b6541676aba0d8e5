import { isRefusal } from '../../domain/commands.js';
import {
  AccountLimitReached,
  InvalidRequest,
  PayloadTooLarge,
  RateLimited,
  type Unavailable,
} from '../../domain/errors.js';
import type { FileUploadStarted } from '../../domain/file/events.js';
import type { FileState } from '../../domain/file/state.js';
import { BlobTooLarge, partBytes } from '../../ports/FileBytes.js';
import type { StoreShape } from '../../ports/Store.js';
import type { Principal } from '../Auth.js';
import type { CommitterShape } from '../Committer.js';
import type { StorageHealthShape } from '../StorageHealth.js';

/** What an upload's form says of the file besides its bytes: its purpose and the expiry asked for. */
export type UploadDetails = {
  readonly purpose: string;
  /** `expires_after[seconds]` (anchored at creation), if asked. */
  readonly expiresAfterSeconds?: number | undefined;
};

/**
 * An upload's form, once it is read: its file's name, its bytes as they come, and its details, which a form may send
 * after the file (the official SDKs do): known once the bytes have been read.
 */
export type UploadForm = {
  readonly filename: string;
  readonly chunks: AsyncIterable<Uint8Array>;
  details(): Promise<UploadDetails | InvalidRequest>;
  /** Stops reading the form (the upload was refused); the rest of the body is left unread. */
  discard(): void;
};

/**
 * An upload as the route hands it over: what its body declares of its size, and the way to start reading its form,
 * which is taken only once the upload's room is held (nothing of the body is read before).
 */
export type Upload = {
  /** The body's declared size (its Content-Length); absent: not declared (a chunked body). */
  readonly declaredBytes?: number | undefined;
  /** The most bytes the body holds besides the file's (the form's boundaries, part headers and fields, bounded). */
  readonly overheadBytes: number;
  open(): Promise<UploadForm | InvalidRequest>;
};

export type UploadDeps = {
  readonly store: StoreShape;
  readonly send: CommitterShape['send'];
  readonly now: () => number;
  readonly newId: () => string;
  readonly maxFileBytes: number;
  /** The longest an upload may take (the server's request timeout): how long its reservation holds. */
  readonly uploadMs: number;
  readonly health: Pick<StorageHealthShape, 'refusal' | 'wrote'>;
  readonly bounds: (principal: Principal) => {
    readonly maxStoredBytes: number;
    readonly maxFiles: number;
    readonly maxConcurrentUploads: number;
  };
  /** Whether a purpose is one an upload may have (its refusal names `purpose`). */
  readonly purposeProblem: (purpose: string) => InvalidRequest | undefined;
};

/** What a client at one of its account's upload bounds is told to wait. */
const retryAfterSeconds: Record<AccountLimitReached['budget'], number> = {
  concurrent_uploads: 5,
  file_storage: 60,
  files: 60,
  batches: 60,
  webhook_endpoints: 60,
};

const limited = (refusal: AccountLimitReached) =>
  new RateLimited({
    message: refusal.message,
    retryAfterSeconds: retryAfterSeconds[refusal.budget],
    budget: refusal.budget,
  });

/** The disk fell below its free-space floor while the upload streamed: it stops, its bytes removed. */
class BelowDiskFloor extends Error {
  override name = 'BelowDiskFloor';
  constructor(readonly refusal: Unavailable) {
    super(refusal.message);
  }
}

/** The chunks, each part's worth told to the disk's health as it goes by; stops once the disk is below its floor. */
async function* watchedFloor(
  chunks: AsyncIterable<Uint8Array>,
  health: UploadDeps['health'],
): AsyncGenerator<Uint8Array> {
  let untold = 0;
  for await (const chunk of chunks) {
    untold += chunk.byteLength;
    if (untold >= partBytes) {
      health.wrote(untold);
      untold = 0;
      const refusal = health.refusal();
      if (refusal !== undefined) throw new BelowDiskFloor(refusal);
    }
    yield chunk;
  }
  health.wrote(untold);
}

/**
 * An upload, bounded before its bytes: first a reservation, decided in the store's write (StartUpload: room under the
 * account's bytes kept, a place under its files kept and among its uploads streaming; a disk below its floor answers
 * 503), then the form is read and its file's bytes streamed into the store within what was reserved, then the file
 * is made (CreateFile takes the reservation). An upload that ends any other way gives its reservation back (EndUpload);
 * one whose server dies meanwhile holds it only until its time is up.
 */
export const uploadFile = async (
  deps: UploadDeps,
  principal: Principal,
  upload: Upload,
): Promise<FileState | InvalidRequest | PayloadTooLarge | RateLimited | Unavailable> => {
  const tooLarge = new PayloadTooLarge({
    message: `file: a file may have at most ${deps.maxFileBytes} bytes (batches.maxFileBytes)`,
  });
  const declared = upload.declaredBytes;
  // A body that says it is larger than any file and its form together is refused before anything of it is read.
  if (declared !== undefined && declared > deps.maxFileBytes + upload.overheadBytes) return tooLarge;
  const { accountId } = principal;
  const bounds = deps.bounds(principal);
  const fileId = deps.newId();
  const now = deps.now();
  const started = await deps.send(
    {
      type: 'File',
      fileId,
      command: {
        type: 'StartUpload',
        accountId,
        // What the body declares holds room for all of it (its form's few bytes too); without a size, the room left.
        bytes: Math.min(declared ?? deps.maxFileBytes, deps.maxFileBytes),
        shrinkToRoom: declared === undefined,
        now,
        heldUntil: now + deps.uploadMs,
        ...bounds,
      },
    },
    // The API's lane: refused (503) while the disk is below its floor or the committer's queue is full.
    { fromApi: true },
  );
  if (!('events' in started)) {
    if (started instanceof AccountLimitReached) return limited(started);
    if (isRefusal(started)) throw started;
    return started;
  }
  const reserved = (started.events[0] as FileUploadStarted).reservedBytes;
  let made = false;
  let form: UploadForm | undefined;
  try {
    const opened = await upload.open();
    if (opened instanceof InvalidRequest) return opened;
    form = opened;
    let stored: { bytes: number; sha256: string };
    try {
      stored = await deps.store.files.write(fileId, watchedFloor(form.chunks, deps.health), reserved, now);
    } catch (error: unknown) {
      if (error instanceof BelowDiskFloor) return error.refusal;
      if (!(error instanceof BlobTooLarge)) throw error;
      // Past what was held for it: the room left (a body of no declared size), or the bound of a file.
      if (reserved < deps.maxFileBytes)
        return limited(
          new AccountLimitReached({
            message: `this upload would take the account's files beyond its plan's ${bounds.maxStoredBytes} bytes (maxFileStorageBytes): delete files to upload more`,
            budget: 'file_storage',
            limit: bounds.maxStoredBytes,
            count: bounds.maxStoredBytes - reserved,
          }),
        );
      return tooLarge;
    }
    const details = await form.details();
    const refused = details instanceof InvalidRequest ? details : deps.purposeProblem(details.purpose);
    if (refused !== undefined || details instanceof InvalidRequest) {
      await deps.store.files.remove(fileId).catch(() => {});
      return refused ?? (details as InvalidRequest);
    }
    const outcome = await deps.send(
      {
        type: 'File',
        fileId,
        command: {
          type: 'CreateFile',
          accountId,
          purpose: details.purpose,
          filename: form.filename,
          bytes: stored.bytes,
          sha256: stored.sha256,
          now,
          expiresAt: details.expiresAfterSeconds === undefined ? undefined : now + details.expiresAfterSeconds * 1000,
          maxStoredBytes: bounds.maxStoredBytes,
          maxFiles: bounds.maxFiles,
        },
      },
      { fromApi: true },
    );
    if (!('events' in outcome)) {
      // Not made: its bytes name no file; gone now, or swept later.
      await deps.store.files.remove(fileId).catch(() => {});
      // Its reservation had lapsed (the upload outlasted its time) and others took the room meanwhile.
      if (outcome instanceof AccountLimitReached) return limited(outcome);
      if (isRefusal(outcome)) throw outcome;
      return outcome;
    }
    made = true;
    return (await deps.store.reads.file(fileId)) as FileState;
  } finally {
    if (!made) {
      form?.discard();
      // Given back at once (the work lane: never refused); if this write fails, the sweep ends it once its time is up.
      await deps
        .send({ type: 'File', fileId, command: { type: 'EndUpload', accountId, now: deps.now() } })
        .catch(() => {});
    }
  }
};
