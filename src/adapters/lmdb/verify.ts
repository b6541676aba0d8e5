import type { AccountState, KeyState, SessionState } from '../../domain/account/state.js';
import type { BatchView } from '../../domain/batch/state.js';
import { passwordCredentialKey, sessionCredentialKey } from '../../domain/commands.js';
import type { FileState } from '../../domain/file/state.js';
import type { AccountUploads } from '../../domain/file/uploads.js';
import type { DeliveryState } from '../../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../../domain/webhook/endpoint.js';
import { type StoredUsage, sameUsage } from '../../storage/hourlyUsage.js';
import type { IndexKey } from '../../storage/projection.js';
import { compareBatchFileViews } from '../../storage/verifyBatches.js';
import { keyText, maxDifferences, type VerifyReport } from '../../storage/verifyReport.js';
import { compareWebhookViews, webhookSecretKeysOf } from '../../storage/verifyWebhooks.js';
import { decodeMap, encodeMap } from './codec.js';
import { accountsVersionKey, type LmdbDatabases, lastSeqKey } from './databases.js';
import { foldLog } from './verifyFold.js';
import { verifyRequests } from './verifyRequests.js';

export type { VerifyReport } from '../../storage/verifyReport.js';

/** A database of views, each decoded, with its key as its id. */
const storedViews = <V>(db: LmdbDatabases['files']) =>
  db.getRange({}).map(({ key, value }) => ({ id: String(key), view: decodeMap<V>(value) }));

export type VerifyOptions = {
  /**
   * Given the files the log leaves (rebuilt, compared with the stored views by then): where a caller checks their
   * bytes against the log, with `verifyFileDigests` (storage/verifyBatches.ts) and the store's FileBytes.
   */
  readonly files?: (files: ReadonlyMap<string, FileState>) => void;
};

/**
 * Rebuilds every view and index from the log and reports where the stored ones differ. Requests are folded with
 * the server's own step (`evolve`, the compiled machine); their index entries are functions of the folded state
 * (`dispatchKeyOf`, `groupOf`), as in the projection, so they are checked against the final states. Views are
 * compared as encoded values. Batches are folded by their machine, their lines' counts by the write path's rule
 * (storage/verifyBatches.ts); files and the indexes of both the same way. It runs synchronously from start to end, so it reads one snapshot of the environment
 * even while a server keeps writing. The log is folded by verifyFold.ts, the requests checked by verifyRequests.ts.
 */
export const verifyViews = (dbs: LmdbDatabases, options: VerifyOptions = {}): VerifyReport => {
  const differences: string[] = [];
  const differ = (message: string) => {
    if (differences.length < maxDifferences) differences.push(message);
  };
  const { columns, account, idempotency, batchesAndFiles, webhooks, events, lastSeq } = foldLog(dbs, differ);
  const { queuedPerAccount, processingPerCounter, dailyUsage, hourlyUsage } = verifyRequests(dbs, columns, differ);

  // Accounts, keys and their indexes (few): compared entry by entry, both ways.
  const compareMap = <V>(
    name: string,
    entries: Iterable<{ key: IndexKey; value: V }>,
    rebuilt: Map<string, V>,
    same: (a: V, b: V) => boolean,
  ) => {
    const seen = new Set<string>();
    for (const { key, value } of entries) {
      const id = keyText(key);
      seen.add(id);
      const expectedValue = rebuilt.get(id);
      if (expectedValue === undefined) differ(`${name} ${id}: stored but not produced by the log`);
      else if (!same(value, expectedValue)) differ(`${name} ${id}: the stored value differs from the log's`);
    }
    for (const id of rebuilt.keys()) if (!seen.has(id)) differ(`${name} ${id}: produced by the log but not stored`);
  };
  const sameEncoded = (stored: Buffer, rebuilt: object) => encodeMap(rebuilt).equals(stored);
  compareMap<Buffer | AccountState>('account', dbs.accounts.getRange({}), account.rebuilt.accounts, (s, r) =>
    sameEncoded(s as Buffer, r),
  );
  compareMap<Buffer | KeyState>('key', dbs.keys.getRange({}), account.rebuilt.keys, (s, r) =>
    sameEncoded(s as Buffer, r),
  );
  for (const name of ['emails', 'keyHashes', 'accountKeys', 'accountSessions'] as const) {
    compareMap(`index ${name}`, dbs.indexes[name].getRange({}), account.rebuilt.indexes[name], (a, b) => a === b);
  }
  compareMap('index idempotency', dbs.indexes.idempotency.getRange({}), idempotency, (a, b) => a === b);
  compareMap('queued count of account', dbs.queuedCounts.getRange({}), queuedPerAccount, (a, b) => a === b);
  compareMap('processing count', dbs.processingCounts.getRange({}), processingPerCounter, (a, b) => a === b);
  compareMap<[number, number]>(
    'daily usage',
    dbs.dailyUsage.getRange({}),
    dailyUsage,
    (a, b) => a[0] === b[0] && a[1] === b[1],
  );
  compareMap<StoredUsage>('hourly usage', dbs.hourlyUsage.getRange({}), hourlyUsage, sameUsage);
  compareMap<Buffer | SessionState>('session', dbs.sessions.getRange({}), account.rebuilt.sessions, (s, r) =>
    sameEncoded(s as Buffer, r),
  );
  // A credential for exactly the accounts whose log set a password and the sessions it left open (the hashes
  // themselves are not in the log).
  const wanted = new Set([
    ...[...account.rebuilt.accounts.values()]
      .filter((a) => a.passwordSetAt !== undefined)
      .map((a) => passwordCredentialKey(a.accountId)),
    ...[...account.rebuilt.sessions.keys()].map(sessionCredentialKey),
    ...webhookSecretKeysOf(webhooks),
  ]);
  for (const key of dbs.credentials.getKeys({})) {
    if (!wanted.delete(String(key))) differ(`credential ${String(key)}: stored but the log sets no such credential`);
  }
  for (const key of wanted) differ(`credential ${key}: the log sets it but it is missing`);
  // Last uses of keys are operational state (not folded from the log), saved only for keys the log made.
  for (const keyId of dbs.keyLastUsed.getKeys({}))
    if (!account.rebuilt.keys.has(String(keyId)))
      differ(`key use ${String(keyId)}: stored for a key the log never made`);
  // Batches, files and their indexes (few beside requests): compared view by view and entry by entry, both ways.
  const made = compareBatchFileViews(
    batchesAndFiles,
    {
      batches: storedViews<BatchView>(dbs.batches),
      files: storedViews<FileState>(dbs.files),
      accountBatches: dbs.indexes.accountBatches.getRange({}),
      accountFiles: dbs.indexes.accountFiles.getRange({}),
      accountOpenBatches: dbs.indexes.accountOpenBatches.getRange({}),
      openBatchInputs: dbs.indexes.openBatchInputs.getRange({}),
      accountFilesByPurpose: dbs.indexes.accountFilesByPurpose.getRange({}),
      uploads: storedViews<AccountUploads>(dbs.uploads),
      accountCounts: dbs.accountCounts.getRange({}),
    },
    differ,
  );
  options.files?.(batchesAndFiles.files);
  const entries = (index: 'accountWebhookEndpoints' | 'webhookDue' | 'endpointWebhookDeliveries') =>
    dbs.indexes[index].getRange({});
  const madeWebhooks = compareWebhookViews(
    webhooks,
    {
      endpoints: storedViews<WebhookEndpointState>(dbs.webhookEndpoints),
      deliveries: storedViews<DeliveryState>(dbs.webhookDeliveries),
      indexes: {
        accountWebhookEndpoints: entries('accountWebhookEndpoints'),
        webhookDue: entries('webhookDue'),
        endpointWebhookDeliveries: entries('endpointWebhookDeliveries'),
      },
    },
    differ,
  );
  const storedLastSeq = dbs.meta.get(lastSeqKey) ?? 0;
  if (storedLastSeq !== lastSeq) differ(`meta lastSeq: stored ${storedLastSeq} but the log ends at ${lastSeq}`);
  const storedVersion = dbs.meta.get(accountsVersionKey) ?? 0;
  if (storedVersion !== account.rebuilt.version)
    differ(`meta accountsVersion: stored ${storedVersion} but the log gives ${account.rebuilt.version}`);
  return {
    events,
    requests: columns.size(),
    accounts: account.rebuilt.accounts.size,
    keys: account.rebuilt.keys.size,
    batches: made.batches,
    files: made.files,
    webhookEndpoints: madeWebhooks.endpoints,
    webhookDeliveries: madeWebhooks.deliveries,
    differences,
  };
};
