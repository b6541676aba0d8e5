/** What the commands of a batch will most likely read (`prefetchOf`): fetched right behind the writer's lock. */
import {
  linesAheadCounter,
  openBatchesCounter,
  storedBytesCounter,
  storedFilesCounter,
} from '../../domain/accountCounters.js';
import { scanLimit } from '../../domain/claimFairly.js';
import { type Command, passwordCredentialKey, sessionCredentialKey } from '../../domain/commands.js';
import { accountCounter, modelCounter, upstreamCounter } from '../../domain/processingCounters.js';
import type { FetchSizes } from './fetched.js';
import type { Need } from './need.js';

/** Request commands that may end their request (a webhook event: the outbox reads its account's endpoints). */
const mayEnd = new Set([
  'Cancel',
  'Expire',
  'TimeUp',
  'RecordSuccess',
  'RecordFailure',
  'FailOver',
  'OwnerGone',
  'Release',
]);
/** Batch commands that may end their batch, or fail it. */
const mayEndBatch = new Set(['EndBatch', 'FailValidation', 'CancelBatch', 'RecordWorkFailure', 'CancelFinalizing']);

/** What the commands of a batch will most likely read: fetched right behind the writer's lock. */
export const prefetchOf = (commands: readonly Command[], sizes: FetchSizes): Need[] => {
  const needs: Need[] = [];
  for (const command of commands) {
    if (command.type === 'Account') {
      const { accountId } = command;
      needs.push({ kind: 'account', id: accountId });
      const inner = command.command as Record<string, unknown>;
      if (typeof inner.email === 'string') needs.push({ kind: 'email', id: inner.email });
      if (typeof inner.keyId === 'string') needs.push({ kind: 'key', id: inner.keyId });
      const key = inner.key as { keyId?: unknown } | undefined;
      if (typeof key?.keyId === 'string') needs.push({ kind: 'key', id: key.keyId });
      if (typeof inner.sessionId === 'string') {
        needs.push({ kind: 'session', id: inner.sessionId });
        needs.push({ kind: 'credential', id: sessionCredentialKey(inner.sessionId) });
      }
      if (inner.type === 'Suspend' || inner.type === 'SetPassword') needs.push({ kind: 'sessionsOf', id: accountId });
      if (inner.type === 'StartSession' || inner.type === 'SetPassword')
        needs.push({ kind: 'credential', id: passwordCredentialKey(accountId) });
      continue;
    }
    if (command.type === 'Claim') {
      needs.push({ kind: 'lapsed', now: command.now, limit: scanLimit });
      needs.push({ kind: 'processingCounts' });
      // The lanes in turn from the one served last, and (to wrap round) from the first, each with its first few
      // waiting requests: what most claims read, fetched right behind the writer's lock.
      // A claim of a few takes from a few lanes (its later rounds, or lanes with nothing it may take, fetch more).
      const page = {
        limit: Math.max(2, Math.min(sizes.accounts, command.max + 1)),
        entries: Math.max(1, Math.min(sizes.firstEntries, command.max + 1)),
      };
      needs.push({ kind: 'accountsAfter', after: command.after ?? '', ...page });
      if (command.after !== undefined) needs.push({ kind: 'accountsAfter', after: '', ...page });
      continue;
    }
    if (command.type === 'WebhookEndpoint') {
      const { accountId } = command.command;
      needs.push({ kind: 'webhookEndpoint', id: command.endpointId }, { kind: 'account', id: accountId });
      if (command.command.type === 'AddEndpoint') needs.push({ kind: 'webhookEndpointsOf', id: accountId });
      continue;
    }
    if (command.type === 'WebhookDelivery') {
      // With its endpoint (fetchInto).
      needs.push({ kind: 'webhookDelivery', id: command.deliveryId });
      continue;
    }
    if (command.type === 'Batch') {
      needs.push({ kind: 'batch', id: command.batchId });
      if (mayEndBatch.has(command.command.type)) needs.push({ kind: 'outboxOf', source: 'batch', id: command.batchId });
      if (command.command.type === 'CreateBatch') {
        needs.push({ kind: 'file', id: command.command.inputFileId });
        if (command.command.maxInProgress !== undefined)
          needs.push({ kind: 'accountCount', id: openBatchesCounter(command.command.accountId) });
      }
      continue;
    }
    if (command.type === 'File') {
      const inner = command.command;
      needs.push({ kind: 'file', id: command.fileId });
      // An upload's reservation, and its file: what the account keeps and its other uploads (uploadDecider.ts).
      if (
        inner.type === 'StartUpload' ||
        inner.type === 'EndUpload' ||
        (inner.type === 'CreateFile' && inner.maxStoredBytes !== undefined)
      ) {
        const accountId = inner.accountId as string;
        needs.push({ kind: 'uploads', id: accountId });
        needs.push({ kind: 'accountCount', id: storedBytesCounter(accountId) });
        needs.push({ kind: 'accountCount', id: storedFilesCounter(accountId) });
      }
      continue;
    }
    // A request's row comes with its batch's view when it is a batch's line (fetchInto): a line's change of status
    // changes its batch's counts.
    needs.push({ kind: 'request', id: command.reqId });
    if (mayEnd.has(command.type)) needs.push({ kind: 'outboxOf', source: 'request', id: command.reqId });
    if (command.type === 'FailOver')
      for (const upstream of command.upstreams)
        needs.push({ kind: 'processingCount', id: upstreamCounter(command.model, upstream.name) });
    if (command.type !== 'Submit') continue;
    if (command.batchId !== undefined) needs.push({ kind: 'batch', id: command.batchId });
    if (command.idempotency !== undefined)
      needs.push({ kind: 'idempotency', accountId: command.accountId, key: command.idempotency.key });
    if (command.maxQueued !== undefined) needs.push({ kind: 'queuedCount', id: command.accountId });
    if (command.maxStoredBytes !== undefined)
      needs.push(
        { kind: 'accountCount', id: storedBytesCounter(command.accountId) },
        { kind: 'accountCount', id: linesAheadCounter(command.accountId) },
      );
    if (command.startNow !== undefined) {
      needs.push({ kind: 'anyWaiting' });
      if (command.modelLimit !== undefined) needs.push({ kind: 'processingCount', id: modelCounter(command.model) });
      if (command.maxProcessing !== undefined)
        needs.push({ kind: 'processingCount', id: accountCounter(command.accountId) });
      for (const upstream of command.upstreams ?? [])
        needs.push({ kind: 'processingCount', id: upstreamCounter(command.model, upstream.name) });
    }
  }
  return needs;
};
