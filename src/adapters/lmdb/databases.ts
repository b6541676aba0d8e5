import { join } from 'node:path';
import { type Database, open, type RootDatabase } from 'lmdb';
import type { GroupName, IndexKey, IndexName } from '../../storage/projection.js';
import { utf8Write } from './codec.js';
import { ensureDataDir } from './dataDir.js';
import { checkDataFile, markDataFile } from './dataFile.js';
import { countHourlyUsage } from './hourlyUsage.js';
import {
  countAccounts,
  countBatchAnswers,
  countProcessingRequests,
  countQueuedRequests,
  countWaitingRequests,
  indexAccountRequests,
  indexAccountSessions,
  indexFilesByPurpose,
  indexOpenBatches,
  indexRequestsByKind,
} from './migrations.js';

/** The LMDB environment and its named databases, opened without anything else of the store, so that reading them
 * (`airs replay --verify`) starts quickly. */

type Key = IndexKey;

/** The named databases of one LMDB environment: the log, the views and their indexes, and the text payloads. */
export type LmdbDatabases = {
  readonly root: RootDatabase;
  /** The log: one record per committed batch (its events, each with its sequence number), keyed by the sequence
   * number of its last event (codec.ts). */
  readonly log: Database<Buffer, number>;
  /** Request records by request id (`requestKey`): the view and the text the request holds now (codec.ts). */
  readonly requests: Database<Buffer, Buffer>;
  readonly accounts: Database<Buffer, string>;
  readonly keys: Database<Buffer, string>;
  /** What must be kept but never logged: password hashes by `password:<accountId>`, session secrets' hashes by
   * `session:<sessionId>`. */
  readonly credentials: Database<string, string>;
  /** Dashboard sessions that have not ended, by session id. */
  readonly sessions: Database<Buffer, string>;
  /** Batches (their state and their lines' counts) by batch id, and files that exist by file id. */
  readonly batches: Database<Buffer, string>;
  readonly files: Database<Buffer, string>;
  /** Each account's uploads whose reservation has not ended (domain/file/uploads.ts), by account id (a view). */
  readonly uploads: Database<Buffer, string>;
  /** Webhook endpoints (removed ones too) by endpoint id, and webhook deliveries by delivery id (views). */
  readonly webhookEndpoints: Database<Buffer, string>;
  readonly webhookDeliveries: Database<Buffer, string>;
  /** Rate-limiter states by [accountId, budget]: operational state saved with the batches, not part of the log. */
  readonly limiter: Database<number, Key>;
  /** When each API key was last used (ms), by key id: operational state saved with the batches, not part of the log
   * (a second or so behind the calls). */
  readonly keyLastUsed: Database<number, string>;
  /** How many of each account's requests are waiting or being processed, by account id (a view: verify rebuilds it). */
  readonly queuedCounts: Database<number, string>;
  /** How many requests of each model are being processed, by model id (a view: verify rebuilds it). */
  readonly processingCounts: Database<number, string>;
  /** Each account's counters (domain/accountCounters.ts: open batches, bytes of files kept), by counter (a view:
   * verify rebuilds it). */
  readonly accountCounts: Database<number, string>;
  /** Tokens of each account's completed requests per UTC day: [accountId, day start ms] → [input, output] (a view). */
  readonly dailyUsage: Database<[number, number], Key>;
  /** Each account's token buckets (domain/tokens/tokenUse.ts) in one record: accountId → [[kind, start ms, tokens]…]
   * (a view of the last minute, day and month, pruned as they pass: a submit reads it in one get). */
  readonly tokenUse: Database<[string, number, number][], string>;
  /** The hourly usage view (hourlyUsage.ts): [hour start ms, accountId, model] → [input, output, requests]. */
  readonly hourlyUsage: Database<readonly [number, number, number], Key>;
  /** Single values kept beside the views: the layout version, `accountsVersion` (account and key events so far),
   * `accountRequestsIndexed` and `accountSessionsIndexed` (an index was built for what was stored before it existed). */
  readonly meta: Database<number, string>;
  readonly indexes: Readonly<Record<IndexName, Database<string, Key>>>;
  /** Grouped indexes (projection.ts): milliseconds to the sorted ids in that group (codec.ts). */
  readonly groups: Readonly<Record<GroupName, Database<Buffer, number>>>;
  /** Uploaded files' bytes (fileBytes.ts): [blobId, part index] → the part's bytes. Not a view: the log names a blob,
   * it does not make it. */
  readonly fileParts: Database<Buffer, [string, number]>;
  /** Every blob stored or being stored: blobId → when its writing began (ms), written before its first part. */
  readonly fileBlobs: Database<number, string>;
};

export const accountsVersionKey = 'accountsVersion';
/** The sequence number of the log's last event, kept beside it in the same transaction (a cursor to the log's last
 * record costs far more per batch). */
export const lastSeqKey = 'lastSeq';
const layoutKey = 'layout';
/** The layout of the databases this code writes. 2: one log record per batch; request records with their text;
 * grouped expiry and processing indexes. */
const layout = 2;

export const environmentFile = (dataDir: string) => join(dataDir, 'airs.mdb');

const keyScratch = Buffer.allocUnsafeSlow(1024);

/**
 * The key of a request's record: its id as UTF-8 bytes, compared by LMDB as plain bytes. Request ids share a long
 * prefix (their creation time), and lmdb-js's own key comparison, word by word, made every lookup twice as costly.
 * For the ids airs makes (ASCII), the bytes and their order are the same as lmdb-js's string keys.
 */
export const requestKey = (reqId: string): Buffer => {
  // Written into one scratch buffer: lmdb-js copies a key before the call that takes it returns, so the next key
  // may overwrite it. Ids longer than the scratch get their own buffer (LMDB refuses keys over 1978 bytes anyway).
  if (reqId.length * 3 > keyScratch.length) return Buffer.from(reqId, 'utf8');
  return keyScratch.subarray(0, utf8Write.call(keyScratch, reqId, 0, keyScratch.length));
};

/** A data directory written by an airs whose databases are laid out differently. */
export class UnknownLayout extends Error {
  // Recognised by name, so that the CLI can tell it apart without loading the store.
  override name = 'UnknownLayout';
}

export const openDatabases = (dataDir: string): LmdbDatabases => {
  ensureDataDir(dataDir);
  checkDataFile(dataDir, environmentFile(dataDir));
  // overlappingSync off: a commit becomes visible only once it is on disk, so no reader (a poll, another process)
  // ever sees a state that a power cut could take back.
  const root = open({ path: environmentFile(dataDir), maxDbs: 48, overlappingSync: false });
  const db = <V, K extends Key>(name: string, encoding?: 'binary' | 'string') =>
    root.openDB<V, K>({ name, ...(encoding === undefined ? {} : { encoding }) });
  const meta = db<number, string>('meta');
  const found = meta.get(layoutKey);
  // The first layout kept one record per event in a database named `events`.
  const oldLog = found === undefined ? root.openDB({ name: 'events', create: false } as { name: string }) : undefined;
  if (found !== undefined ? found !== layout : oldLog !== undefined) {
    void root.close();
    throw new UnknownLayout(
      `the data directory ${dataDir} was written by a version of airs with another storage layout (${found ?? 1}; this version reads ${layout}); the version that wrote it still reads it; to start afresh, move it aside (cp -a keeps a copy) and start with an empty directory`,
    );
  }
  if (found === undefined) meta.putSync(layoutKey, layout);
  markDataFile(dataDir);
  const dbs: LmdbDatabases = {
    root,
    log: db('log', 'binary'),
    requests: root.openDB<Buffer, Buffer>({ name: 'requests', encoding: 'binary', keyEncoding: 'binary' }),
    accounts: db('accounts', 'binary'),
    keys: db('keys', 'binary'),
    credentials: db('credentials', 'string'),
    sessions: db('sessions', 'binary'),
    batches: db('batches', 'binary'),
    files: db('files', 'binary'),
    // Made empty in a data directory written before it: no upload held a reservation there.
    uploads: db('file.uploads', 'binary'),
    // Made empty in a data directory written before them: no webhook event existed there.
    webhookEndpoints: db('webhook.endpoints', 'binary'),
    webhookDeliveries: db('webhook.deliveries', 'binary'),
    limiter: db('limiter'),
    keyLastUsed: db('keyLastUsed'),
    queuedCounts: db('cnt.queued'),
    processingCounts: db('cnt.processing'),
    // Made empty in a data directory written before it, then counted once (countAccounts).
    accountCounts: db('cnt.account'),
    dailyUsage: db('usage.daily'),
    // Made empty in a data directory written before it: budgets count from the first request that ends after.
    tokenUse: db('usage.tokens'),
    // Made empty in a data directory written before it, then counted once from the request records (countHourlyUsage).
    hourlyUsage: db('usage.hourly'),
    meta,
    indexes: {
      dispatch: db('idx.dispatch', 'string'),
      accountRequests: db('idx.accountRequests', 'string'),
      // Built once from the request records in a data directory written before it (indexRequestsByKind).
      accountRequestsByKind: db('idx.accountRequestsByKind', 'string'),
      emails: db('idx.emails', 'string'),
      keyHashes: db('idx.keyHashes', 'string'),
      accountKeys: db('idx.accountKeys', 'string'),
      accountSessions: db('idx.accountSessions', 'string'),
      idempotency: db('idx.idempotency', 'string'),
      accountBatches: db('idx.accountBatches', 'string'),
      accountFiles: db('idx.accountFiles', 'string'),
      // Made empty in a data directory written before them, then built once (indexOpenBatches).
      accountOpenBatches: db('idx.accountOpenBatches', 'string'),
      openBatchInputs: db('idx.openBatchInputs', 'string'),
      // Built once from the file views in a data directory written before it (indexFilesByPurpose).
      accountFilesByPurpose: db('idx.accountFilesByPurpose', 'string'),
      accountWebhookEndpoints: db('idx.accountWebhookEndpoints', 'string'),
      webhookDue: db('idx.webhookDue', 'string'),
      endpointWebhookDeliveries: db('idx.endpointWebhookDeliveries', 'string'),
    },
    groups: { expiry: db('grp.expiry', 'binary'), processing: db('grp.processing', 'binary') },
    // Made empty in a data directory written before them: the layout is unchanged (nothing else moved).
    fileParts: db('file.parts', 'binary'),
    fileBlobs: db('file.blobs'),
  };
  indexAccountRequests(dbs);
  countQueuedRequests(dbs);
  countProcessingRequests(dbs);
  countWaitingRequests(dbs);
  countBatchAnswers(dbs);
  countAccounts(dbs);
  indexAccountSessions(dbs);
  indexOpenBatches(dbs);
  indexFilesByPurpose(dbs);
  countHourlyUsage(dbs);
  indexRequestsByKind(dbs);
  return dbs;
};
