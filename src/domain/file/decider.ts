import { Refused } from '../errors.js';
import type { FileEvent } from './events.js';
import type { FileState } from './state.js';

export type FileCommand =
  | {
      readonly type: 'CreateFile';
      readonly accountId: string;
      readonly purpose: string;
      readonly filename: string;
      readonly bytes: number;
      readonly sha256: string;
      readonly now: number;
      readonly expiresAt?: number | undefined;
      /** The account's bound of bytes of files kept (its plan's `maxFileStorageBytes`), decided inside the write;
       * absent: none (a batch's output files). An upload's file carries it, and ends the upload's reservation. */
      readonly maxStoredBytes?: number | undefined;
      /** The account's bound of files kept (its plan's `maxFiles`); absent: none. */
      readonly maxFiles?: number | undefined;
    }
  /**
   * An upload begins: room and a place are held for it before its first byte is read (file/uploadDecider.ts), within
   * the account's plan's bounds of bytes kept, files kept and uploads streaming at once.
   */
  | {
      readonly type: 'StartUpload';
      readonly accountId: string;
      /** The most bytes the upload may write: its declared size (with `shrinkToRoom` false), else the bound of a file. */
      readonly bytes: number;
      /** No size declared (a chunked body): hold the room left, up to `bytes`, rather than refuse for want of it. */
      readonly shrinkToRoom: boolean;
      readonly now: number;
      /** When the reservation stops counting (the longest an upload may take). */
      readonly heldUntil: number;
      readonly maxStoredBytes: number;
      readonly maxFiles: number;
      readonly maxConcurrentUploads: number;
    }
  /** An upload that failed or was abandoned gives its reservation back; the sweep ends one past its time (`lapsed`). */
  | { readonly type: 'EndUpload'; readonly accountId: string; readonly now: number; readonly lapsed?: boolean }
  /** By its account (`accountId`), or by the sweeper once it has expired (`expired`). */
  | {
      readonly type: 'DeleteFile';
      readonly accountId?: string | undefined;
      readonly now: number;
      readonly expired?: boolean;
    };

/** A file is made once and deleted once; only by its own account, or when its time is up. */
export const decideFile = (
  fileId: string,
  state: FileState | undefined,
  command: Exclude<FileCommand, { type: 'StartUpload' | 'EndUpload' }>,
): FileEvent[] | Refused => {
  if (command.type === 'CreateFile') {
    if (state !== undefined) return new Refused({ message: `a file with id ${fileId} already exists` });
    const { type: _type, now, maxStoredBytes: _bound, maxFiles: _files, ...rest } = command;
    const created = { type: 'FileCreated' as const, fileId, ...rest, at: now };
    if (created.expiresAt === undefined) delete created.expiresAt;
    return [created];
  }
  if (state === undefined || (command.accountId !== undefined && state.accountId !== command.accountId))
    return new Refused({ message: `no file ${fileId}` });
  if (command.expired === true && (state.expiresAt === undefined || command.now < state.expiresAt))
    return new Refused({ message: `file ${fileId} has not expired` });
  return [
    command.expired === true
      ? { type: 'FileDeleted', fileId, at: command.now, reason: 'expired' }
      : { type: 'FileDeleted', fileId, at: command.now },
  ];
};
