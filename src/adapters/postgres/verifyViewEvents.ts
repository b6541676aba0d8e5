/** The log's few events that are not requests' (accounts, keys, sessions, batches, files, webhooks) folded in order. */
import { type AccountEvent, isAccountEvent } from '../../domain/account/events.js';
import { type BatchEvent, isBatchEvent } from '../../domain/batch/events.js';
import { type BatchState, evolveBatch, initialBatchState } from '../../domain/batch/state.js';
import type { StoredEvent } from '../../domain/events.js';
import { type FileEvent, isFileEvent, isUploadEvent } from '../../domain/file/events.js';
import { evolveFile, type FileState } from '../../domain/file/state.js';
import { type AccountUploads, evolveUploads } from '../../domain/file/uploads.js';
import { isWebhookEvent } from '../../domain/webhook/events.js';
import { projectAccountEvent } from '../../storage/projection.js';
import { accountViews } from '../../storage/verifyReport.js';
import { createWebhookFold } from '../../storage/verifyWebhooks.js';
import type { VerifyCheck } from './verifyCheck.js';
import { show } from './verifyValues.js';

/** Folds them into maps in seq order (`accountViews`, as the LMDB verify does; batches and files by their steps). */
export const foldViewEvents = async ({ differ, pagesOf, payloadOf }: VerifyCheck) => {
  const account = accountViews();
  const webhooks = createWebhookFold();
  const batchStates = new Map<string, BatchState>();
  const files = new Map<string, FileState>();
  const foldBatch = (seq: number | string, event: BatchEvent) => {
    const before = batchStates.get(event.batchId) ?? initialBatchState;
    const after = evolveBatch(before, event);
    // The machine's step makes a new state for every event it accepts; the writer appends no other.
    if (after === before) differ(`event ${seq}: ${event.type} is not accepted by the batch machine`);
    else batchStates.set(event.batchId, after);
  };
  const uploads = new Map<string, AccountUploads>();
  const foldFile = (event: FileEvent) => {
    if (isUploadEvent(event)) {
      const held = evolveUploads(uploads.get(event.accountId), event);
      if (held === undefined) uploads.delete(event.accountId);
      else uploads.set(event.accountId, held);
      return;
    }
    const after = evolveFile(files.get(event.fileId), event);
    if (after === undefined) files.delete(event.fileId);
    else files.set(event.fileId, after);
  };
  for await (const rows of pagesOf<{ seq: number | string; payload: StoredEvent }>(
    'airs_verify_accounts',
    `SELECT seq, payload FROM events WHERE coalesce(payload->>'type', '') NOT LIKE 'Request%' ORDER BY seq`,
  )) {
    for (const row of rows) {
      const event = payloadOf(row);
      try {
        if (isBatchEvent(event)) foldBatch(row.seq, event);
        else if (isFileEvent(event)) foldFile(event);
        else if (isAccountEvent(event)) projectAccountEvent(account.views, event as AccountEvent);
        else if (isWebhookEvent(event)) {
          // The writer appends only what the delivery machine accepts.
          if (!webhooks.event(event)) differ(`event ${row.seq}: ${event.type} is not accepted by the delivery machine`);
        } else differ(`event ${row.seq}: ${show(event?.type)} is of no type the log holds`);
      } catch (error) {
        differ(`event ${row.seq}: ${show(event?.type)} cannot be folded (${(error as Error).message})`);
      }
    }
  }
  return { account, webhooks, batchStates, files, uploads };
};
