import type { BatchView } from '../../../../domain/batch/state.js';
import { isFinalBatch, publicBatchStatus } from '../../../../domain/batch/state.js';
import type { FileState } from '../../../../domain/file/state.js';
import { shownMetadataOf } from '../metadata.js';

/** Unix seconds, or null for a time that has not come. */
const seconds = (ms: number | undefined): number | null => (ms === undefined ? null : Math.floor(ms / 1000));

/** A file as OpenAI's Files API shows it. */
export const fileObjectOf = (file: FileState) => ({
  id: file.fileId,
  object: 'file' as const,
  bytes: file.bytes,
  created_at: seconds(file.createdAt) as number,
  filename: file.filename,
  purpose: file.purpose,
  status: 'processed' as const,
  expires_at: seconds(file.expiresAt),
  status_details: null,
});

/**
 * `request_counts`: once its files are written, their counts (every line in exactly one); once ended without them (it
 * failed, or the operator cancelled it while finalizing), the lines that completed and every other line as failed;
 * before, the store's counts of its lines.
 */
const requestCountsOf = (view: BatchView) => {
  const { status, context } = view.state;
  const total = context.total ?? 0;
  if (context.completed !== undefined) return { total, completed: context.completed, failed: context.failed ?? 0 };
  if (isFinalBatch(status))
    return { total, completed: view.counts.completed, failed: Math.max(0, total - view.counts.completed) };
  return { total, completed: view.counts.completed, failed: view.counts.failed };
};

/** A batch as OpenAI's Batch API shows it (contract 16): its status, times, files, counts and usage. */
export const batchObjectOf = (view: BatchView) => {
  const { status, context } = view.state;
  const endedAs = (ending: string) => (context.ending === ending ? seconds(context.endedAt) : null);
  const errors = context.errors === undefined ? null : { object: 'list' as const, data: JSON.parse(context.errors) };
  const { inputTokens, outputTokens } = view.counts;
  return {
    id: context.batchId,
    object: 'batch' as const,
    endpoint: context.endpoint,
    model: context.model ?? null,
    errors,
    input_file_id: context.inputFileId,
    completion_window: context.completionWindow,
    status: publicBatchStatus(status),
    output_file_id: context.outputFileId ?? null,
    error_file_id: context.errorFileId ?? null,
    created_at: seconds(context.createdAt) as number,
    in_progress_at: seconds(context.inProgressAt),
    expires_at: seconds(context.expiresAt),
    finalizing_at: seconds(context.finalizingAt),
    completed_at: endedAs('completed'),
    failed_at: seconds(context.failedAt),
    expired_at: endedAs('expired'),
    cancelling_at: seconds(context.cancellingAt),
    cancelled_at: endedAs('cancelled'),
    request_counts: requestCountsOf(view),
    usage: {
      input_tokens: inputTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: inputTokens + outputTokens,
    },
    metadata: context.metadata === undefined ? null : shownMetadataOf(context.metadata),
  };
};

/** A page of a list as OpenAI's lists show it. */
export const listOf = <T extends { readonly id: string }>(data: readonly T[], hasMore: boolean) => ({
  object: 'list' as const,
  data,
  first_id: data[0]?.id ?? null,
  last_id: data[data.length - 1]?.id ?? null,
  has_more: hasMore,
});
