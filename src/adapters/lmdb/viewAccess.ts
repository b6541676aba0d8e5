import type { AccountState, KeyState, SessionState } from '../../domain/account/state.js';
import type { BatchView } from '../../domain/batch/state.js';
import type { FileState } from '../../domain/file/state.js';
import type { AccountUploads } from '../../domain/file/uploads.js';
import type { ViewAccess } from '../../storage/projection.js';
import type {
  CountChanges,
  createGroupChanges,
  createUsageChanges,
  createWaitingChanges,
  createWebhookViewChanges,
} from './batchChanges.js';
import { decodeMap, decodeView, encodeMap, encodeRecord, holdsText, textBytesOf } from './codec.js';
import { accountsVersionKey, type LmdbDatabases, requestKey } from './databases.js';
import type { createHourlyUsageChanges } from './hourlyUsage.js';
import { decoded } from './syncReads.js';
import type { createWrittenStates } from './writtenStates.js';

/** The projection's ViewAccess over LMDB (storage/projection.ts): how a batch reads and writes the views. */

type WrittenStates = ReturnType<typeof createWrittenStates>;

/** The projection's view access, writing through the open transaction. */
export const viewsOf = (
  dbs: LmdbDatabases,
  written: WrittenStates,
  groups: ReturnType<typeof createGroupChanges>,
  counts: { readonly queued: CountChanges; readonly processing: CountChanges; readonly account: CountChanges },
  usage: ReturnType<typeof createUsageChanges>,
  hourlyUsage: ReturnType<typeof createHourlyUsageChanges>,
  waiting: ReturnType<typeof createWaitingChanges>,
  webhooks: ReturnType<typeof createWebhookViewChanges>,
): ViewAccess => ({
  getRequest: (reqId) => written.get(reqId) ?? decoded(dbs.requests.getBinaryFast(requestKey(reqId)), decodeView),
  putRequest: (reqId, state, text) => {
    written.set(reqId, state);
    // A request that keeps its text through this change (a start, a retry) carries it over from its record.
    const key = requestKey(reqId);
    const kept =
      text === undefined && holdsText(state.status) ? decoded(dbs.requests.getBinaryFast(key), textBytesOf) : text;
    dbs.requests.put(key, encodeRecord(state, kept));
  },
  getAccount: (accountId) => decoded(dbs.accounts.getBinaryFast(accountId), decodeMap<AccountState>),
  putAccount: (accountId, state) => void dbs.accounts.put(accountId, encodeMap(state)),
  getKey: (keyId) => decoded(dbs.keys.getBinaryFast(keyId), decodeMap<KeyState>),
  putKey: (keyId, state) => void dbs.keys.put(keyId, encodeMap(state)),
  getIndex: (index, key) => dbs.indexes[index].get(key),
  putIndex: (index, key, value) => {
    dbs.indexes[index].put(key, value);
    if (index === 'dispatch') waiting.add(1);
  },
  removeIndex: (index, key) => {
    dbs.indexes[index].remove(key);
    if (index === 'dispatch') waiting.add(-1);
  },
  moveInGroup: groups.move,
  putCredential: (key, value) =>
    void (value === undefined ? dbs.credentials.remove(key) : dbs.credentials.put(key, value)),
  getSession: (sessionId) => decoded(dbs.sessions.getBinaryFast(sessionId), decodeMap<SessionState>),
  putSession: (sessionId, state) =>
    void (state === undefined ? dbs.sessions.remove(sessionId) : dbs.sessions.put(sessionId, encodeMap(state))),
  bumpAccountsVersion: () => void dbs.meta.put(accountsVersionKey, (dbs.meta.get(accountsVersionKey) ?? 0) + 1),
  addQueued: counts.queued.add,
  addProcessing: counts.processing.add,
  addAccountCount: counts.account.add,
  addUsage: usage.add,
  addTokens: usage.addTokens,
  addHourlyUsage: hourlyUsage.add,
  getBatch: (batchId) => decoded(dbs.batches.getBinaryFast(batchId), decodeMap<BatchView>),
  putBatch: (batchId, view) => void dbs.batches.put(batchId, encodeMap(view)),
  getFile: (fileId) => decoded(dbs.files.getBinaryFast(fileId), decodeMap<FileState>),
  putFile: (fileId, state) =>
    void (state === undefined ? dbs.files.remove(fileId) : dbs.files.put(fileId, encodeMap(state))),
  getUploads: (accountId) => decoded(dbs.uploads.getBinaryFast(accountId), decodeMap<AccountUploads>),
  putUploads: (accountId, uploads) =>
    void (uploads === undefined ? dbs.uploads.remove(accountId) : dbs.uploads.put(accountId, encodeMap(uploads))),
  getWebhookEndpoint: webhooks.getEndpoint,
  putWebhookEndpoint: webhooks.putEndpoint,
  getWebhookDelivery: webhooks.getDelivery,
  putWebhookDelivery: webhooks.putDelivery,
});
