import { isAccountEvent } from '../../domain/account/events.js';
import { isBatchEvent } from '../../domain/batch/events.js';
import type { StoredEvent } from '../../domain/events.js';
import { isFileEvent } from '../../domain/file/events.js';
import { isRequestEvent } from '../../domain/request/events.js';
import {
  evolveInPlace,
  initialRequestState,
  type MutableRequestState,
  type RequestStatus,
} from '../../domain/request/state.js';
import { isWebhookEvent } from '../../domain/webhook/events.js';
import { idempotencyKeyOf, projectAccountEvent } from '../../storage/projection.js';
import { createBatchFileFold } from '../../storage/verifyBatches.js';
import { accountViews, keyText } from '../../storage/verifyReport.js';
import { createWebhookFold } from '../../storage/verifyWebhooks.js';
import type { LmdbDatabases } from './databases.js';
import { visitLogRecord } from './logRecord.js';
import { createRequestColumns } from './requestColumns.js';

/** The log folded for verification in one pass: requests (into columns), accounts, batches, files and webhooks. */

/** Folds every record of the log, in order, reporting gaps and events the machines do not accept to `differ`. */
export const foldLog = (dbs: LmdbDatabases, differ: (message: string) => void) => {
  // Each request's state, folded in place by the fold's own step: a request is loaded into one working state when
  // its events begin (they often come in a row), changed there, and written back to columns kept outside the heap.
  const columns = createRequestColumns();
  const account = accountViews();
  let events = 0;
  let expected = 1;
  // The idempotency index, rebuilt event by event with the projection's rule (idempotencyKeyOf): an entry from the
  // request's RequestQueued, removed at its expiry only while it still names that request.
  const idempotency = new Map<string, string>();
  const trackIdempotency = (event: StoredEvent & { type: string }, state: MutableRequestState) => {
    const key = idempotencyKeyOf(state);
    if (key === undefined) return;
    const reqId = state.context.reqId;
    if (event.type === 'RequestQueued') idempotency.set(keyText(key), reqId);
    else if (event.type === 'RequestExpired' && idempotency.get(keyText(key)) === reqId)
      idempotency.delete(keyText(key));
  };
  // Batches (their state, and their lines' counts) and files, rebuilt beside the requests: a line's event passes on
  // only its status before the event (read here, before the step changes it) and the working state after it.
  const batchesAndFiles = createBatchFileFold();
  const webhooks = createWebhookFold();
  const countLine = (before: RequestStatus) => {
    const { batchId } = columns.working.context;
    if (batchId !== undefined) batchesAndFiles.line(batchId, before, columns.working);
  };
  let workingReqId: string | undefined;
  let workingSlot = -1;
  const putBack = () => {
    if (workingSlot >= 0) columns.save(workingSlot);
  };
  const fold = (event: StoredEvent) => {
    if (event.seq !== expected) throw new Error(`the log has a gap: expected event ${expected}, found ${event.seq}`);
    expected++;
    if (!isRequestEvent(event)) {
      if (isAccountEvent(event)) projectAccountEvent(account.views, event);
      else if (isBatchEvent(event)) {
        if (!batchesAndFiles.batchEvent(event))
          differ(`event ${event.seq}: ${event.type} is not accepted by the machine`);
      } else if (isFileEvent(event)) batchesAndFiles.fileEvent(event);
      else if (isWebhookEvent(event)) {
        if (!webhooks.event(event)) differ(`event ${event.seq}: ${event.type} is not accepted by the machine`);
      }
      return;
    }
    if (event.reqId === workingReqId) {
      const before = columns.working.status;
      if (!evolveInPlace(columns.working, event))
        differ(`event ${event.seq}: ${event.type} is not accepted by the machine`);
      else {
        trackIdempotency(event, columns.working);
        countLine(before);
      }
      return;
    }
    putBack();
    workingReqId = undefined;
    workingSlot = -1;
    if (event.type === 'RequestQueued') {
      // A request's life begins with this event (the machine accepts it only from nothing): a new slot. A request
      // queued twice gets two slots, and both are compared with its one record below, so it is reported there.
      evolveInPlace(columns.loadState(initialRequestState), event);
      trackIdempotency(event, columns.working);
      countLine('none');
      workingSlot = columns.append(event.reqId);
    } else {
      const slot = columns.slotOf(event.reqId);
      const before = slot === undefined ? 'none' : columns.load(slot).status;
      if (slot === undefined || !evolveInPlace(columns.working, event)) {
        differ(`event ${event.seq}: ${event.type} is not accepted by the machine`);
        return;
      }
      trackIdempotency(event, columns.working);
      countLine(before);
      workingSlot = slot;
    }
    workingReqId = event.reqId;
  };
  for (const { key, value } of dbs.log.getRange({})) {
    events += visitLogRecord(value, fold);
    if (key !== expected - 1) differ(`log record ${key}: its last event is ${expected - 1}`);
  }
  putBack();
  return { columns, account, idempotency, batchesAndFiles, webhooks, events, lastSeq: expected - 1 };
};
