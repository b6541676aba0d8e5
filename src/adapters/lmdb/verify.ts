import type { AccountState, KeyState } from '../../domain/account/state.js';
import { isRequestEvent } from '../../domain/request/events.js';
import { evolve, initialRequestState, type RequestState } from '../../domain/request/state.js';
import { decodeEvents, decodeIds, encodeMap, encodeView, holdsText, textBytesOf, viewBytesOf } from './codec.js';
import { accountsVersionKey, type LmdbDatabases, lastSeqKey } from './LmdbStore.js';
import {
  dispatchKeyOf,
  type GroupName,
  groupOf,
  type IndexKey,
  projectAccountEvent,
  type ViewAccess,
} from './projection.js';

export type VerifyReport = {
  readonly events: number;
  readonly requests: number;
  readonly accounts: number;
  readonly keys: number;
  /** Each difference between stored and rebuilt, in words. Empty when the views match the log. */
  readonly differences: string[];
};

const maxDifferences = 50;

/** An index key as text, for messages and for the small account indexes kept in maps. */
const keyText = (key: IndexKey): string => (Array.isArray(key) ? key.join('\u0001') : String(key));

const sameKey = (a: IndexKey, b: IndexKey | undefined): boolean =>
  Array.isArray(a) && Array.isArray(b) ? a.length === b.length && a.every((part, i) => part === b[i]) : a === b;

type AccountViews = {
  readonly accounts: Map<string, AccountState>;
  readonly keys: Map<string, KeyState>;
  readonly indexes: Record<'emails' | 'keyHashes' | 'accountKeys', Map<string, string>>;
  version: number;
};

/** Account and key views rebuilt in maps by the projection the server runs (there are few of them). */
const accountViews = (): { views: ViewAccess; rebuilt: AccountViews } => {
  const rebuilt: AccountViews = {
    accounts: new Map(),
    keys: new Map(),
    indexes: { emails: new Map(), keyHashes: new Map(), accountKeys: new Map() },
    version: 0,
  };
  const unexpected = () => {
    throw new Error('an account event touched a request view');
  };
  const views: ViewAccess = {
    getRequest: unexpected,
    putRequest: unexpected,
    moveInGroup: unexpected,
    getAccount: (accountId) => rebuilt.accounts.get(accountId),
    putAccount: (accountId, state) => void rebuilt.accounts.set(accountId, state),
    getKey: (keyId) => rebuilt.keys.get(keyId),
    putKey: (keyId, state) => void rebuilt.keys.set(keyId, state),
    putIndex: (index, key, value) =>
      void rebuilt.indexes[index as keyof AccountViews['indexes']].set(keyText(key), value),
    removeIndex: (index, key) => void rebuilt.indexes[index as keyof AccountViews['indexes']].delete(keyText(key)),
    bumpAccountsVersion: () => {
      rebuilt.version++;
    },
  };
  return { views, rebuilt };
};

/**
 * Rebuilds every view and index from the log and reports where the stored ones differ. Requests are folded with
 * the server's own step (`evolve`, the compiled machine); their index entries are functions of the folded state
 * (`dispatchKeyOf`, `groupOf`), as in the projection, so they are checked against the final states. Views are
 * compared as encoded values. It runs synchronously from start to end, so it reads one snapshot of the environment
 * even while a server keeps writing.
 */
export const verifyViews = (dbs: LmdbDatabases): VerifyReport => {
  const differences: string[] = [];
  const differ = (message: string) => {
    if (differences.length < maxDifferences) differences.push(message);
  };
  const requests = new Map<string, RequestState>();
  const account = accountViews();
  let events = 0;
  let expected = 1;
  for (const { key, value } of dbs.log.getRange({})) {
    const batch = decodeEvents(value);
    for (const event of batch) {
      if (event.seq !== expected) throw new Error(`the log has a gap: expected event ${expected}, found ${event.seq}`);
      expected++;
      if (isRequestEvent(event)) {
        const before = requests.get(event.reqId) ?? initialRequestState;
        const after = evolve(before, event);
        if (after === before) differ(`event ${event.seq}: ${event.type} is not accepted by the machine`);
        requests.set(event.reqId, after);
      } else projectAccountEvent(account.views, event);
    }
    if (key !== expected - 1) differ(`log record ${key}: its last event is ${expected - 1}`);
    events += batch.length;
  }

  // Request records: the view compared as an encoded value, both ways; text kept exactly while the status calls
  // for it (a prompt is never empty; a response may be).
  let stored = 0;
  for (const { key, value } of dbs.requests.getRange({})) {
    stored++;
    const rebuilt = requests.get(key);
    if (rebuilt === undefined) differ(`request ${key}: stored but not produced by the log`);
    else if (!encodeView(rebuilt).equals(viewBytesOf(value)))
      differ(`request ${key}: the stored view differs from the log's`);
    else {
      const textLength = textBytesOf(value).length;
      const queued = rebuilt.status === 'waiting' || rebuilt.status === 'processing';
      if ((queued && textLength === 0) || (!holdsText(rebuilt.status) && textLength > 0))
        differ(`request ${key}: ${textLength === 0 ? 'no' : 'a'} text stored while it is ${rebuilt.status}`);
    }
  }
  if (stored !== requests.size) differ(`requests: ${stored} records stored, the log gives ${requests.size}`);

  // The dispatch index: every stored entry is the one its request's state calls for, and none is missing.
  let dispatched = 0;
  for (const { key, value } of dbs.indexes.dispatch.getRange({})) {
    dispatched++;
    const state = requests.get((key as (string | number)[])[2] as string);
    const wanted = state === undefined ? undefined : dispatchKeyOf(state);
    if (!sameKey(key, wanted)) differ(`index dispatch ${keyText(key)}: stored but not produced by the log`);
    else if (value !== state?.context.model) differ(`index dispatch ${keyText(key)}: model differs`);
  }
  let waiting = 0;
  for (const state of requests.values()) if (dispatchKeyOf(state) !== undefined) waiting++;
  if (dispatched !== waiting) differ(`index dispatch: ${dispatched} entries stored, the log gives ${waiting}`);

  // Grouped indexes: each group holds exactly the sorted ids its requests' states put there.
  const checkGroups = (name: GroupName) => {
    const wanted = new Map<number, string[]>();
    for (const state of requests.values()) {
      const group = groupOf[name](state);
      if (group === undefined) continue;
      const ids = wanted.get(group);
      if (ids === undefined) wanted.set(group, [state.context.reqId]);
      else ids.push(state.context.reqId);
    }
    for (const { key, value } of dbs.groups[name].getRange({})) {
      const ids = wanted.get(key)?.sort();
      wanted.delete(key);
      const stored = decodeIds(value);
      if (ids === undefined || ids.length !== stored.length || ids.some((id, i) => id !== stored[i]))
        differ(`group ${name} ${key}: stores ${stored.length} ids, the log gives ${ids?.length ?? 0} (or others)`);
    }
    for (const key of wanted.keys()) differ(`group ${name} ${key}: produced by the log but not stored`);
  };
  checkGroups('expiry');
  checkGroups('processing');

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
  for (const name of ['emails', 'keyHashes', 'accountKeys'] as const) {
    compareMap(`index ${name}`, dbs.indexes[name].getRange({}), account.rebuilt.indexes[name], (a, b) => a === b);
  }
  const storedLastSeq = dbs.meta.get(lastSeqKey) ?? 0;
  if (storedLastSeq !== expected - 1)
    differ(`meta lastSeq: stored ${storedLastSeq} but the log ends at ${expected - 1}`);
  const storedVersion = dbs.meta.get(accountsVersionKey) ?? 0;
  if (storedVersion !== account.rebuilt.version) {
    differ(`meta accountsVersion: stored ${storedVersion} but the log gives ${account.rebuilt.version}`);
  }
  return {
    events,
    requests: requests.size,
    accounts: account.rebuilt.accounts.size,
    keys: account.rebuilt.keys.size,
    differences,
  };
};
