/** What a batch's change does to the views: its view, its list and open-batch entries, its account's counts. */
import { accountCountsOfBatch, addCountChange } from '../domain/accountCounters.js';
import { type BatchView, isFinalBatch } from '../domain/batch/state.js';
import type { IndexKey, ViewAccess } from './viewAccess.js';

/** An account's batches, newest last: [accountId, createdAt, batchId] → ''. */
export const accountBatchKeyOf = (view: BatchView): IndexKey => [
  view.state.context.accountId,
  view.state.context.createdAt,
  view.state.context.batchId,
];
/**
 * A batch not ended among its account's open batches: [accountId, batchId] → ''. By account first, so that each server's
 * batch runner takes the accounts in turn (app/batches/openBatchTurns.ts) and one account's many batches hold back no
 * other's.
 */
export const accountOpenBatchKeyOf = (view: BatchView): IndexKey => [
  view.state.context.accountId,
  view.state.context.batchId,
];
/** A batch not ended by the file it reads: [inputFileId, batchId] → ''. Whether a file's bytes may go (a deleted
 * file's, an expired one's) is one seek, not a read of every open batch. */
export const openBatchInputKeyOf = (view: BatchView): IndexKey => [
  view.state.context.inputFileId,
  view.state.context.batchId,
];

/**
 * What a batch's change does to the views: its view, its entry among its account's batches (from its creation), and
 * until it ends its entries among its account's open batches and the open batches' input files, and in its account's
 * count of open batches.
 */
export const projectBatchChange = (views: ViewAccess, before: BatchView | undefined, after: BatchView): void => {
  const { batchId } = after.state.context;
  views.putBatch(batchId, after);
  if (before === undefined) views.putIndex('accountBatches', accountBatchKeyOf(after), '');
  const wasOpen = before !== undefined && !isFinalBatch(before.state.status);
  const isOpen = !isFinalBatch(after.state.status);
  if (!wasOpen && isOpen) {
    views.putIndex('accountOpenBatches', accountOpenBatchKeyOf(after), '');
    views.putIndex('openBatchInputs', openBatchInputKeyOf(after), '');
  }
  if (wasOpen && !isOpen) {
    views.removeIndex('accountOpenBatches', accountOpenBatchKeyOf(after));
    views.removeIndex('openBatchInputs', openBatchInputKeyOf(after));
  }
  addCountChange(
    (counter, delta) => views.addAccountCount(counter, delta),
    accountCountsOfBatch(before),
    accountCountsOfBatch(after),
  );
};
