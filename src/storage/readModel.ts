import { type QueuedRequest, queuePositionOf } from '../domain/queuePosition.js';
import type { ReadModel } from '../ports/Store.js';
import { dueWorkOf } from './dueWork.js';
import { queueDepthsOf } from './queueDepths.js';
import type { SyncReads } from './syncReads.js';

/**
 * The read model of a store whose reads answer at once (LMDB's memory map, memory): each read renews the read
 * snapshot first (about half a microsecond), so it sees everything committed before it began, by this process or
 * another. A snapshot shared by the reads of one event-loop turn would not: news of another process's commit (its
 * answer, a change notification) may arrive in a later callback of the same turn, and a read there would miss it.
 * Answers are plain promises of what was read.
 */
export const readModelOf = (
  reads: SyncReads,
  options: {
    readonly limiterState: (accountId: string, budget: string) => number | undefined;
    readonly onChange: ReadModel['onChange'];
  },
): ReadModel => {
  const fresh = () => reads.refresh();
  const read =
    <A extends unknown[], R>(f: (...args: A) => R) =>
    (...args: A): Promise<R> => {
      fresh();
      try {
        return Promise.resolve(f(...args));
      } catch (error) {
        return Promise.reject(error);
      }
    };
  return {
    request: read(reads.request),
    requestWithText: read(reads.requestWithText),
    requestsWithText: read((reqIds: readonly string[]) => reqIds.map((reqId) => reads.requestWithText(reqId))),
    requests: read((reqIds: readonly string[]) => reqIds.map((reqId) => reads.request(reqId))),
    account: read(reads.account),
    accountIdByEmail: read(reads.accountIdByEmail),
    accounts: read(() => [...reads.accounts()]),
    key: read(reads.key),
    keyIdByHash: read(reads.keyIdByHash),
    keysOf: read(reads.keysOf),
    accountsVersion: read(reads.accountsVersion),
    credential: read(reads.credential),
    session: read(reads.session),
    limiterState: read(options.limiterState),
    requestsOf: read(reads.requestsOf),
    requestCountsByHour: read(reads.requestCountsByHour),
    usageByDay: read(reads.usageByDay),
    tokenUse: read(reads.tokenUse),
    usageRows: read(reads.usageRows),
    keyLastUsed: read(reads.keyLastUsed),
    batch: read(reads.batch),
    file: read(reads.file),
    listOf: read(reads.listOf),
    openBatches: read(reads.openBatches),
    openBatchAccounts: read(reads.openBatchAccounts),
    openBatchesOf: read(reads.openBatchesOf),
    isOpenBatchInput: read(reads.isOpenBatchInput),
    processingCount: read(reads.processingCount),
    accountCount: read(reads.accountCount),
    uploadsOf: read(reads.uploadsOf),
    lapsedUploads: read(reads.lapsedUploads),
    webhookEndpoint: read(reads.webhookEndpoint),
    webhookEndpointsOf: read(reads.webhookEndpointsOf),
    webhookDelivery: read(reads.webhookDelivery),
    webhookDeliveriesOf: read(reads.webhookDeliveriesOf),
    dueWebhookDeliveries: read(reads.dueWebhookDeliveries),
    webhookBacklog: read(reads.webhookBacklog),
    dueForExpiry: read(reads.dueForExpiry),
    processing: read((limit: number) => reads.processing().slice(0, Math.max(0, limit))),
    dueWork: read((now: number) => dueWorkOf(reads, now)),
    queueDepths: read((now: number, limit: number) => queueDepthsOf(reads, now, limit)),
    queuePosition: read((request: QueuedRequest, now: number, promoteAfterMs: number | undefined) =>
      queuePositionOf(reads, request, now, promoteAfterMs),
    ),
    lastSeq: read(reads.lastSeq),
    events: (fromSeq) => {
      fresh();
      const events = reads.events(fromSeq);
      return (async function* () {
        yield* events;
      })();
    },
    onChange: options.onChange,
  };
};
