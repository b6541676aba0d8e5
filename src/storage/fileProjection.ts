/** What a file's event does to the views: its view, its list entries, its account's counts and uploads. */
import { accountCountsOfFile, addCountChange } from '../domain/accountCounters.js';
import { type FileEvent, isUploadEvent } from '../domain/file/events.js';
import { evolveFile, type FileState } from '../domain/file/state.js';
import { evolveUploads } from '../domain/file/uploads.js';
import type { IndexKey, ViewAccess } from './viewAccess.js';

/** An account's files: [accountId, createdAt, fileId] → its purpose. */
export const accountFileKeyOf = (file: FileState): IndexKey => [file.accountId, file.createdAt, file.fileId];
/** An account's files of one purpose: [accountId, purpose, createdAt, fileId] → '' (what a list filtered by purpose
 * reads: only the rows it returns). */
export const filePurposeKeyOf = (file: FileState): IndexKey => [
  file.accountId,
  file.purpose,
  file.createdAt,
  file.fileId,
];

/** Applies a file event: its view, its entries among its account's files (all, and of its purpose; removed with it)
 * and its bytes and itself in its account's counts; or, for an upload's reservation, its account's uploads. */
export const projectFileEvent = (views: ViewAccess, event: FileEvent): void => {
  if (isUploadEvent(event)) {
    views.putUploads(event.accountId, evolveUploads(views.getUploads(event.accountId), event));
    return;
  }
  const before = views.getFile(event.fileId);
  const after = evolveFile(before, event);
  if (after === before) return;
  views.putFile(event.fileId, after);
  if (before !== undefined) {
    views.removeIndex('accountFiles', accountFileKeyOf(before));
    views.removeIndex('accountFilesByPurpose', filePurposeKeyOf(before));
  }
  if (after !== undefined) {
    views.putIndex('accountFiles', accountFileKeyOf(after), after.purpose);
    views.putIndex('accountFilesByPurpose', filePurposeKeyOf(after), '');
  }
  addCountChange(
    (counter, delta) => views.addAccountCount(counter, delta),
    accountCountsOfFile(before),
    accountCountsOfFile(after),
  );
};
