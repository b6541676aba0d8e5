import { isAccountEvent } from '../../domain/account/events.js';
import type { AccountState, KeyState, SessionState } from '../../domain/account/state.js';
import { isBatchEvent } from '../../domain/batch/events.js';
import type { BatchView } from '../../domain/batch/state.js';
import { passwordCredentialKey, sessionCredentialKey } from '../../domain/commands.js';
import type { StoredEvent } from '../../domain/events.js';
import { isFileEvent } from '../../domain/file/events.js';
import type { FileState } from '../../domain/file/state.js';
import type { AccountUploads } from '../../domain/file/uploads.js';
import { countersOf } from '../../domain/processingCounters.js';
import { countsAsQueued } from '../../domain/queuedCounter.js';
import { isRequestEvent } from '../../domain/request/events.js';
import {
  evolveInPlace,
  initialRequestState,
  type MutableRequestState,
  type RequestStatus,
} from '../../domain/request/state.js';
import type { DeliveryState } from '../../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../../domain/webhook/endpoint.js';
import { isWebhookEvent } from '../../domain/webhook/events.js';
import { addRebuiltUsage, type StoredUsage, sameUsage } from '../../storage/hourlyUsage.js';
import {
  accountRequestKeyOf,
  accountRequestKindKeyOf,
  dispatchKeyOf,
  type GroupName,
  groupOf,
  type IndexKey,
  idempotencyKeyOf,
  projectAccountEvent,
  usageOf,
} from '../../storage/projection.js';
import { compareBatchFileViews, createBatchFileFold } from '../../storage/verifyBatches.js';
import { accountViews, keyText, maxDifferences, type VerifyReport } from '../../storage/verifyReport.js';
import { compareWebhookViews, createWebhookFold, webhookSecretKeysOf } from '../../storage/verifyWebhooks.js';
import { countIds, decodeIds, decodeMap, encodeMap, holdsText, viewEnd, viewMatches } from './codec.js';
import { accountsVersionKey, type LmdbDatabases, lastSeqKey, requestKey } from './databases.js';
import { visitLogRecord } from './logRecord.js';
import { waitingCountKey } from './migrations.js';
import { createRequestColumns } from './requestColumns.js';

export type { VerifyReport } from '../../storage/verifyReport.js';

/** A database of views, each decoded, with its key as its id. */
const storedViews = <V>(db: LmdbDatabases['files']) =>
  db.getRange({}).map(({ key, value }) => ({ id: String(key), view: decodeMap<V>(value) }));

const sameKey = (a: IndexKey, b: IndexKey | undefined): boolean =>
  Array.isArray(a) && Array.isArray(b) ? a.length === b.length && a.every((part, i) => part === b[i]) : a === b;

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
 * even while a server keeps writing.
 */
export const verifyViews = (dbs: LmdbDatabases, options: VerifyOptions = {}): VerifyReport => {
  const differences: string[] = [];
  const differ = (message: string) => {
    if (differences.length < maxDifferences) differences.push(message);
  };
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

  // The grouped indexes as stored: how many ids each holds (read from the groups' headers). Each group is decoded
  // once, when a rebuilt request asks for it or, for a group no rebuilt request belongs to, at the end.
  const storedInGroups: Record<GroupName, number> = { expiry: 0, processing: 0 };
  const storedGroupKeys: Record<GroupName, number[]> = { expiry: [], processing: [] };
  const readGroups: Record<GroupName, Set<number>> = { expiry: new Set(), processing: new Set() };
  for (const name of ['expiry', 'processing'] as const) {
    for (const { key, value } of dbs.groups[name].getRange({})) {
      storedInGroups[name] += countIds(value);
      storedGroupKeys[name].push(key);
    }
  }
  /** A stored group's ids; their order (sorted, no id twice) is checked the first time the group is read. */
  const decodeGroup = (name: GroupName, key: number, stored: Uint8Array): string[] => {
    const ids = decodeIds(stored);
    if (readGroups[name].has(key)) return ids;
    readGroups[name].add(key);
    for (let i = 1; i < ids.length; i++)
      if ((ids[i - 1] as string) >= (ids[i] as string)) differ(`group ${name} ${key}: ids out of order at ${ids[i]}`);
    return ids;
  };
  /** The ids of one stored group, as a set; requests visited in creation order mostly ask for the same group again. */
  const groupReader = (name: GroupName) => {
    let key: number | undefined;
    let ids = new Set<string>();
    return (wanted: number): Set<string> => {
      if (wanted !== key) {
        key = wanted;
        const stored = dbs.groups[name].getBinaryFast(wanted);
        ids = new Set(stored === undefined ? [] : decodeGroup(name, wanted, stored));
      }
      return ids;
    };
  };
  const membersOf: Record<GroupName, (key: number) => Set<string>> = {
    expiry: groupReader('expiry'),
    processing: groupReader('processing'),
  };

  // One pass over the rebuilt requests: each stored record (its view compared as an encoded value; text kept
  // exactly while the status calls for it: a prompt is never empty, a response may be), the group each belongs to,
  // and what the dispatch index should hold. Together with the counts, every stored entry is accounted for.
  let waiting = 0;
  let unexpired = 0;
  let missing = 0;
  const queuedPerAccount = new Map<string, number>();
  const processingPerCounter = new Map<string, number>();
  const dailyUsage = new Map<string, [number, number]>();
  const hourlyUsage = new Map<string, StoredUsage>();
  const inGroups: Record<GroupName, number> = { expiry: 0, processing: 0 };
  const ids = columns.ids();
  for (let slot = 0; slot < ids.length; slot++) {
    const reqId = ids[slot] as string;
    // The working state, filled from the slot (no object per request; absent fields are undefined, which the
    // projection's rules and the view's encoding read as absent).
    const rebuilt = columns.load(slot);
    if (dispatchKeyOf(rebuilt) !== undefined) waiting++;
    addRebuiltUsage(hourlyUsage, rebuilt, keyText);
    const used = usageOf(rebuilt);
    if (used !== undefined) {
      const key = keyText([rebuilt.context.accountId, used.day]);
      const sum = dailyUsage.get(key) ?? [0, 0];
      dailyUsage.set(key, [sum[0] + used.usage.inputTokens, sum[1] + used.usage.outputTokens]);
    }
    if (rebuilt.status === 'processing')
      for (const counter of countersOf(rebuilt.context))
        processingPerCounter.set(counter, (processingPerCounter.get(counter) ?? 0) + 1);
    if (countsAsQueued(rebuilt)) {
      const { accountId } = rebuilt.context;
      queuedPerAccount.set(accountId, (queuedPerAccount.get(accountId) ?? 0) + 1);
    }
    if (accountRequestKeyOf(rebuilt) !== undefined) unexpired++;
    for (const name of ['expiry', 'processing'] as const) {
      const group = groupOf[name](rebuilt);
      if (group === undefined) continue;
      inGroups[name]++;
      if (!membersOf[name](group).has(reqId)) differ(`group ${name} ${group}: does not hold ${reqId}, the log does`);
    }
    const record = dbs.requests.getBinaryFast(requestKey(reqId));
    if (record === undefined) {
      differ(`request ${reqId}: produced by the log but not stored`);
      missing++;
      continue;
    }
    if (!viewMatches(rebuilt, record)) differ(`request ${reqId}: the stored view differs from the log's`);
    else {
      const textLength = record.length - viewEnd(record);
      const queued = rebuilt.status === 'waiting' || rebuilt.status === 'processing';
      if ((queued && textLength === 0) || (!holdsText(rebuilt.status) && textLength > 0))
        differ(`request ${reqId}: ${textLength === 0 ? 'no' : 'a'} text stored while it is ${rebuilt.status}`);
    }
  }
  for (const name of ['expiry', 'processing'] as const) {
    for (const key of storedGroupKeys[name]) {
      const stored = readGroups[name].has(key) ? undefined : dbs.groups[name].getBinaryFast(key);
      if (stored !== undefined) decodeGroup(name, key, stored);
    }
    if (storedInGroups[name] !== inGroups[name])
      differ(`group ${name}: ${storedInGroups[name]} ids stored, the log gives ${inGroups[name]}`);
  }
  const storedRequests = (dbs.requests.getStats() as { entryCount: number }).entryCount;
  // Records the log does not make: there are some if the counts differ, or if some the log makes are missing.
  if (storedRequests !== columns.size() || missing > 0) {
    for (const key of dbs.requests.getKeys({})) {
      const reqId = key.toString('utf8');
      if (columns.slotOf(reqId) === undefined) differ(`request ${reqId}: stored but not produced by the log`);
    }
    if (storedRequests !== columns.size())
      differ(`requests: ${storedRequests} records stored, the log gives ${columns.size()}`);
  }

  // The dispatch index: every stored entry is the one its request's state calls for, and none is missing.
  let dispatched = 0;
  for (const { key, value } of dbs.indexes.dispatch.getRange({})) {
    dispatched++;
    const slot = columns.slotOf((key as (string | number)[])[2] as string);
    const state = slot === undefined ? undefined : columns.read(slot);
    const wanted = state === undefined ? undefined : dispatchKeyOf(state);
    if (!sameKey(key, wanted)) differ(`index dispatch ${keyText(key)}: stored but not produced by the log`);
    else if (value !== state?.context.model) differ(`index dispatch ${keyText(key)}: model differs`);
  }
  if (dispatched !== waiting) differ(`index dispatch: ${dispatched} entries stored, the log gives ${waiting}`);
  const storedWaiting = dbs.meta.get(waitingCountKey) ?? 0;
  if (storedWaiting !== waiting) differ(`meta waiting: stored ${storedWaiting} but the log gives ${waiting}`);

  // The index of requests by account, the same way; when the counts differ, the entries the log calls for and the
  // index lacks are named too (a second pass, made only then).
  let listed = 0;
  for (const { key, value } of dbs.indexes.accountRequests.getRange({})) {
    listed++;
    const slot = columns.slotOf((key as (string | number)[])[2] as string);
    const state = slot === undefined ? undefined : columns.read(slot);
    const wanted = state === undefined ? undefined : accountRequestKeyOf(state);
    if (!sameKey(key, wanted)) differ(`index accountRequests ${keyText(key)}: stored but not produced by the log`);
    else if (value !== '') differ(`index accountRequests ${keyText(key)}: holds a value`);
  }
  if (listed !== unexpired) {
    for (let slot = 0; slot < ids.length; slot++) {
      const wanted = accountRequestKeyOf(columns.load(slot));
      if (wanted !== undefined && !dbs.indexes.accountRequests.doesExist(wanted))
        differ(`index accountRequests ${keyText(wanted)}: produced by the log but not stored`);
    }
    differ(`index accountRequests: ${listed} entries stored, the log gives ${unexpired}`);
  }
  // The same requests by kind (interactive or a batch's line): one entry each, the projection's own key.
  let listedByKind = 0;
  for (const { key, value } of dbs.indexes.accountRequestsByKind.getRange({})) {
    listedByKind++;
    const slot = columns.slotOf((key as (string | number)[])[3] as string);
    const state = slot === undefined ? undefined : columns.read(slot);
    const wanted = state === undefined ? undefined : accountRequestKindKeyOf(state);
    if (!sameKey(key, wanted) || value !== '')
      differ(`index accountRequestsByKind ${keyText(key)}: stored but not produced by the log`);
  }
  if (listedByKind !== unexpired)
    differ(`index accountRequestsByKind: ${listedByKind} entries stored, the log gives ${unexpired}`);

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
  if (storedLastSeq !== expected - 1)
    differ(`meta lastSeq: stored ${storedLastSeq} but the log ends at ${expected - 1}`);
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
