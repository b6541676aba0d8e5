import { AccountLimitReached, Refused } from '../errors.js';
import type { FileCommand } from './decider.js';
import type { FileEvent } from './events.js';
import type { FileState } from './state.js';
import { type AccountUploads, heldBytes, liveUploads } from './uploads.js';

/**
 * An upload's bounds, decided inside the store's write (exact across processes and nodes): before its first byte is
 * read, an upload takes a reservation (`StartUpload`) of room under the account's bytes kept (`maxFileStorageBytes`),
 * a place under its files kept (`maxFiles`) and a place among its uploads streaming (`maxConcurrentUploads`), each
 * counted with the other uploads' reservations that still hold; its file (`CreateFile`) then takes what it reserved.
 */

/** What an upload's decision reads: the file of its id, the account's reservations, and what the account keeps. */
export type UploadFacts = {
  readonly file: FileState | undefined;
  readonly uploads: AccountUploads;
  readonly storedBytes: number;
  readonly storedFiles: number;
};

type StartUpload = Extract<FileCommand, { type: 'StartUpload' }>;
type EndUpload = Extract<FileCommand, { type: 'EndUpload' }>;
type CreateFile = Extract<FileCommand, { type: 'CreateFile' }>;

const tooManyUploads = (streaming: number, max: number) =>
  new AccountLimitReached({
    message: `this account has ${streaming} uploads streaming; its plan allows ${max} at once (maxConcurrentUploads): wait for one to end`,
    budget: 'concurrent_uploads',
    limit: max,
    count: streaming,
  });

const tooManyFiles = (files: number, streaming: number, max: number) =>
  new AccountLimitReached({
    message: `this account keeps ${files} files${streaming > 0 ? ` and has ${streaming} uploads streaming` : ''}; its plan allows ${max} files (maxFiles): delete files to upload more`,
    budget: 'files',
    limit: max,
    count: files + streaming,
  });

const noRoom = (bytes: number, taken: number, max: number) =>
  new AccountLimitReached({
    message: `this upload${bytes > 0 ? ` (${bytes} bytes)` : ''} would take the account's files beyond its plan's ${max} bytes (maxFileStorageBytes): delete files to upload more`,
    budget: 'file_storage',
    limit: max,
    count: taken,
  });

/** A reservation made or given back. */
export const decideUpload = (
  fileId: string,
  facts: UploadFacts,
  command: StartUpload | EndUpload,
): FileEvent[] | Refused | AccountLimitReached => {
  const own = facts.uploads.find((upload) => upload.fileId === fileId);
  if (command.type === 'EndUpload') {
    if (own === undefined) return new Refused({ message: `no upload ${fileId}` });
    if (command.lapsed === true && command.now < own.heldUntil)
      return new Refused({ message: `upload ${fileId} is still within its time` });
    const outcome = command.lapsed === true ? 'lapsed' : 'failed';
    return [{ type: 'FileUploadEnded', fileId, accountId: command.accountId, at: command.now, outcome }];
  }
  if (facts.file !== undefined || own !== undefined)
    return new Refused({ message: `a file with id ${fileId} already exists` });
  const live = liveUploads(facts.uploads, command.now);
  if (live.length >= command.maxConcurrentUploads) return tooManyUploads(live.length, command.maxConcurrentUploads);
  if (facts.storedFiles + live.length >= command.maxFiles)
    return tooManyFiles(facts.storedFiles, live.length, command.maxFiles);
  const taken = facts.storedBytes + heldBytes(live);
  const room = command.maxStoredBytes - taken;
  if (command.shrinkToRoom ? room <= 0 : command.bytes > room)
    return noRoom(command.shrinkToRoom ? 0 : command.bytes, taken, command.maxStoredBytes);
  return [
    {
      type: 'FileUploadStarted',
      fileId,
      accountId: command.accountId,
      reservedBytes: command.shrinkToRoom ? Math.min(command.bytes, room) : command.bytes,
      at: command.now,
      heldUntil: command.heldUntil,
    },
  ];
};

/**
 * Why an upload's file may not be made, if it may not: none while its own reservation holds and covers its bytes
 * (the room and the place were held for it); without one (it lapsed: the upload outlasted its time), the file is
 * decided as a new arrival, against what the account keeps and the other reservations that still hold.
 */
export const createFileRefusal = (
  fileId: string,
  facts: UploadFacts,
  command: CreateFile,
): AccountLimitReached | undefined => {
  if (command.maxStoredBytes === undefined) return undefined;
  const live = liveUploads(facts.uploads, command.now);
  const own = live.find((upload) => upload.fileId === fileId);
  if (own !== undefined && command.bytes <= own.reservedBytes) return undefined;
  const others = live.filter((upload) => upload.fileId !== fileId);
  if (command.maxFiles !== undefined && facts.storedFiles + others.length >= command.maxFiles)
    return tooManyFiles(facts.storedFiles, others.length, command.maxFiles);
  const taken = facts.storedBytes + heldBytes(others);
  if (taken + command.bytes > command.maxStoredBytes) return noRoom(0, taken, command.maxStoredBytes);
  return undefined;
};

/** The end of an upload's reservation that its file's creation brings, in the same write (none without one). */
export const reservationTaken = (fileId: string, facts: UploadFacts, command: CreateFile): FileEvent[] =>
  facts.uploads.some((upload) => upload.fileId === fileId)
    ? [{ type: 'FileUploadEnded', fileId, accountId: command.accountId, at: command.now, outcome: 'created' }]
    : [];
