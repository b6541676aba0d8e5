/** The columns of request, batch and file rows that their indexes are over, each a function of the row's state. */
import { type BatchView, isFinalBatch } from '../../domain/batch/state.js';
import { dispatchLaneOf } from '../../domain/dispatchLane.js';
import type { FileState } from '../../domain/file/state.js';
import type { RequestState } from '../../domain/request/state.js';
import { groupOf } from '../../storage/projection.js';

/** The columns of a request's row that its indexes are made of: each a function of its state (projection.ts). */
export const requestColumns = (state: RequestState) => {
  const { context, status } = state;
  return {
    account_id: context.accountId,
    status,
    // The dispatch index's lane (projection.ts, dispatchKeyOf), while the request waits.
    lane: status === 'waiting' ? dispatchLaneOf(context) : null,
    model: context.model,
    created_at: context.createdAt,
    available_at: context.availableAt,
    expires_at: groupOf.expiry(state) ?? null,
    lease_until: groupOf.processing(state) ?? null,
    // A batch's line or a request made on its own: the dashboard's Requests filter reads each kind by its own index.
    batch_line: context.batchId !== undefined,
  };
};

/** The columns of a batch's row its indexes are over: an account's batches (projection.ts, accountBatchKeyOf) and
 * the open ones, by account and by input file (accountOpenBatchKeyOf, openBatchInputKeyOf). */
export const batchColumns = (view: BatchView) => ({
  account_id: view.state.context.accountId,
  created_at: view.state.context.createdAt,
  open: !isFinalBatch(view.state.status),
  input_file_id: view.state.context.inputFileId,
});

/** The columns of a file's row its index is over: an account's files, with their purpose (accountFileKeyOf). */
export const fileColumns = (file: FileState) => ({
  account_id: file.accountId,
  created_at: file.createdAt,
  purpose: file.purpose,
});
