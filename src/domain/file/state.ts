import type { FileEvent } from './events.js';

/** A file that exists (deleted files have no view). */
export type FileState = {
  readonly fileId: string;
  readonly accountId: string;
  readonly purpose: string;
  readonly filename: string;
  readonly bytes: number;
  readonly sha256: string;
  readonly createdAt: number;
  readonly expiresAt?: number;
};

/** A file's view after `event`; an upload's reservation events leave it as it is (file/uploads.ts folds those). */
export const evolveFile = (state: FileState | undefined, event: FileEvent): FileState | undefined => {
  if (event.type === 'FileUploadStarted' || event.type === 'FileUploadEnded') return state;
  if (event.type === 'FileDeleted') return undefined;
  if (state !== undefined) return state;
  const created: { -readonly [K in keyof FileState]?: FileState[K] } = {
    fileId: event.fileId,
    accountId: event.accountId,
    purpose: event.purpose,
    filename: event.filename,
    bytes: event.bytes,
    sha256: event.sha256,
    createdAt: event.at,
  };
  if (event.expiresAt !== undefined) created.expiresAt = event.expiresAt;
  return created as FileState;
};
