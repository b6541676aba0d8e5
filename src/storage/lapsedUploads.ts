import type { AccountUploads } from '../domain/file/uploads.js';
import type { LapsedUpload } from '../ports/Store.js';

/**
 * The uploads whose reservation's time was up at `now` and that were not ended, up to `limit`, from every account's
 * uploads (one view per account with an upload streaming or lapsed: few, so read whole). PostgreSQL answers the same
 * in SQL.
 */
export const lapsedUploadsOf = (
  accounts: Iterable<{ readonly accountId: string; readonly uploads: AccountUploads }>,
  now: number,
  limit: number,
): LapsedUpload[] => {
  const lapsed: LapsedUpload[] = [];
  for (const { accountId, uploads } of accounts)
    for (const upload of uploads) {
      if (lapsed.length >= limit) return lapsed;
      if (upload.heldUntil <= now) lapsed.push({ accountId, fileId: upload.fileId });
    }
  return lapsed;
};
