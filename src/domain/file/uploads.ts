import type { UploadEvent } from './events.js';

/** An upload's reservation (FileUploadStarted), held until it ends or `heldUntil` passes. */
export type UploadReservation = {
  readonly fileId: string;
  readonly reservedBytes: number;
  readonly startedAt: number;
  readonly heldUntil: number;
};

/**
 * An account's uploads whose reservation has not ended, in the order they began: one view per account, so that an
 * upload's decision reads them all at once. Few: each streaming upload holds one (bounded by the plan's
 * `maxConcurrentUploads`), and a reservation whose server crashed is ended by the sweep once its time is up.
 */
export type AccountUploads = readonly UploadReservation[];

/** The account's uploads after `event`; `undefined`: none left. */
export const evolveUploads = (uploads: AccountUploads | undefined, event: UploadEvent): AccountUploads | undefined => {
  const others = (uploads ?? []).filter((upload) => upload.fileId !== event.fileId);
  if (event.type === 'FileUploadEnded') return others.length === 0 ? undefined : others;
  return [
    ...others,
    { fileId: event.fileId, reservedBytes: event.reservedBytes, startedAt: event.at, heldUntil: event.heldUntil },
  ];
};

/** The reservations that still hold room at `now`: one past its `heldUntil` counts no more, ended or not. */
export const liveUploads = (uploads: AccountUploads, now: number): AccountUploads =>
  uploads.filter((upload) => now < upload.heldUntil);

/** The bytes the reservations hold. */
export const heldBytes = (uploads: AccountUploads): number =>
  uploads.reduce((sum, upload) => sum + upload.reservedBytes, 0);
