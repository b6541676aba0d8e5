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

/**
 * An upload began: before its first byte was read, room for `reservedBytes` of the account's files and a place among
 * its files and its uploads streaming were held for it, until `heldUntil` (the longest an upload may take), decided in
 * the store's write against what the account keeps and the other uploads' reservations (file/uploadDecider.ts).
 */
export type FileUploadStarted = {
  readonly type: 'FileUploadStarted';
  readonly fileId: string;
  readonly accountId: string;
  /** The most bytes the upload may write: what it declared (its Content-Length), or the room left. */
  readonly reservedBytes: number;
  readonly at: number;
  /** After this, no decision counts the reservation any more (its server crashed mid-upload), and the sweep ends it. */
  readonly heldUntil: number;
};

/**
 * An upload's reservation ended: its file was made in the same write (`created`), the upload failed or was abandoned
 * (`failed`), or its time was up with no word from its server (`lapsed`, recorded by the sweep).
 */
export type FileUploadEnded = {
  readonly type: 'FileUploadEnded';
  readonly fileId: string;
  readonly accountId: string;
  readonly at: number;
  readonly outcome: 'created' | 'failed' | 'lapsed';
};

export type UploadEvent = FileUploadStarted | FileUploadEnded;

export type FileEvent = FileCreated | FileDeleted | UploadEvent;

export const isFileEvent = (event: { type: string }): event is FileEvent => event.type.startsWith('File');

/** An upload's reservation's events (a subset of the file events). */
export const isUploadEvent = (event: FileEvent): event is UploadEvent =>
  event.type === 'FileUploadStarted' || event.type === 'FileUploadEnded';
