/**
 * Events of an uploaded or written file (contract 16). The bytes live beside the log (the store's FileBytes, under
 * the file's id); the log holds what identifies them: their size and SHA-256, checked by `replay --verify`.
 */
export type FileCreated = {
  readonly type: 'FileCreated';
  readonly fileId: string;
  readonly accountId: string;
  /** `batch` (an upload) or `batch_output` (a batch's output or error file). */
  readonly purpose: string;
  readonly filename: string;
  readonly bytes: number;
  readonly sha256: string;
  readonly at: number;
  /** When it is deleted by itself; absent: never. */
  readonly expiresAt?: number | undefined;
};

/** Deleted by its account, or because it expired (`expired`). Its bytes go once this is durable. */
export type FileDeleted = {
  readonly type: 'FileDeleted';
  readonly fileId: string;
  readonly at: number;
  /** `expired`: deleted because its time was up; absent: by its account. */
  readonly reason?: 'expired' | undefined;
};

export type FileEvent = FileCreated | FileDeleted;

export const isFileEvent = (event: { type: string }): event is FileEvent => event.type.startsWith('File');
