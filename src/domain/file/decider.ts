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
       * absent: none (a batch's output files). */
      readonly maxStoredBytes?: number | undefined;
    }
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
  command: FileCommand,
): FileEvent[] | Refused => {
  if (command.type === 'CreateFile') {
    if (state !== undefined) return new Refused({ message: `a file with id ${fileId} already exists` });
    const { type: _type, now, maxStoredBytes: _bound, ...rest } = command;
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
