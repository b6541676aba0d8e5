import type { AccountState, KeyState } from '../../domain/account/state.js';
import type { RequestState } from '../../domain/request/state.js';
import { accountsVersionKey, type LmdbDatabases } from './LmdbStore.js';
import { type IndexKey, type IndexName, project, type ViewAccess } from './projection.js';

/** Views rebuilt in memory from the log by the same projection the server runs. */
type Rebuilt = {
  readonly requests: Map<string, RequestState>;
  readonly accounts: Map<string, AccountState>;
  readonly keys: Map<string, KeyState>;
  readonly indexes: Record<IndexName, Map<string, string | null>>;
  accountsVersion: number;
};

export type VerifyReport = {
  readonly events: number;
  readonly requests: number;
  readonly accounts: number;
  readonly keys: number;
  /** Each difference between stored and rebuilt, in words. Empty when the views match the log. */
  readonly differences: string[];
};

const canonical = (value: unknown) => JSON.stringify(value);
/** An index key as a map key: cheaper than JSON, and unambiguous for the ids and numbers keys are made of. */
const keyText = (key: IndexKey): string => (Array.isArray(key) ? key.join('\u0001') : String(key));
/** Index values are strings or null; views are objects compared by their JSON. */
const sameValue = (a: unknown, b: unknown) =>
  a === b || (typeof a === 'object' && a !== null && canonical(a) === canonical(b));
const maxDifferences = 50;

const rebuild = (dbs: LmdbDatabases): { rebuilt: Rebuilt; events: number } => {
  const rebuilt: Rebuilt = {
    requests: new Map(),
    accounts: new Map(),
    keys: new Map(),
    indexes: {
      dispatch: new Map(),
      expiry: new Map(),
      emails: new Map(),
      keyHashes: new Map(),
      accountKeys: new Map(),
    },
    accountsVersion: 0,
  };
  const views: ViewAccess = {
    getRequest: (reqId) => rebuilt.requests.get(reqId),
    putRequest: (reqId, state) => void rebuilt.requests.set(reqId, state),
    getAccount: (accountId) => rebuilt.accounts.get(accountId),
    putAccount: (accountId, state) => void rebuilt.accounts.set(accountId, state),
    getKey: (keyId) => rebuilt.keys.get(keyId),
    putKey: (keyId, state) => void rebuilt.keys.set(keyId, state),
    putIndex: (index, key, value) => void rebuilt.indexes[index].set(keyText(key), value),
    removeIndex: (index, key) => void rebuilt.indexes[index].delete(keyText(key)),
    removePayloads: () => {},
    bumpAccountsVersion: () => {
      rebuilt.accountsVersion++;
    },
  };
  let events = 0;
  let expected = 1;
  for (const { key, value } of dbs.events.getRange({})) {
    if (key !== expected) throw new Error(`the log has a gap: expected event ${expected}, found ${key}`);
    expected++;
    events++;
    project(views, value);
  }
  return { rebuilt, events };
};

/** Compares one stored database with its rebuilt map, in both directions. */
const compare = <V>(
  name: string,
  stored: Iterable<{ key: IndexKey; value: V }>,
  rebuilt: Map<string, V>,
  keyOf: (key: IndexKey) => string,
  differences: string[],
) => {
  const seen = new Set<string>();
  for (const { key, value } of stored) {
    const id = keyOf(key);
    seen.add(id);
    if (!rebuilt.has(id)) differences.push(`${name} ${id}: stored but not produced by the log`);
    else if (!sameValue(rebuilt.get(id), value)) {
      differences.push(`${name} ${id}: stored ${canonical(value)} but the log gives ${canonical(rebuilt.get(id))}`);
    }
  }
  for (const id of rebuilt.keys())
    if (!seen.has(id)) differences.push(`${name} ${id}: produced by the log but not stored`);
};

/**
 * Rebuilds every view and index from the log and reports where the stored ones differ. It runs synchronously
 * from start to end, so it reads one snapshot of the environment even while a server keeps writing.
 */
export const verifyViews = (dbs: LmdbDatabases): VerifyReport => {
  const { rebuilt, events } = rebuild(dbs);
  const differences: string[] = [];
  const plain = (key: IndexKey) => String(key);
  compare('request', dbs.requests.getRange({}), rebuilt.requests, plain, differences);
  compare('account', dbs.accounts.getRange({}), rebuilt.accounts, plain, differences);
  compare('key', dbs.keys.getRange({}), rebuilt.keys, plain, differences);
  for (const name of Object.keys(rebuilt.indexes) as IndexName[]) {
    compare(`index ${name}`, dbs.indexes[name].getRange({}), rebuilt.indexes[name], keyText, differences);
  }
  const storedVersion = dbs.meta.get(accountsVersionKey) ?? 0;
  if (storedVersion !== rebuilt.accountsVersion) {
    differences.push(`meta accountsVersion: stored ${storedVersion} but the log gives ${rebuilt.accountsVersion}`);
  }
  // Payloads: a prompt while the request lives, a response while it is completed and lives; nothing after expiry.
  for (const { key } of dbs.payloads.getRange({})) {
    const [reqId, kind] = key as [string, string];
    const state = rebuilt.requests.get(reqId);
    const allowed =
      state !== undefined && state.status !== 'expired' && (kind === 'prompt' || state.status === 'completed');
    if (!allowed)
      differences.push(`payload ${kind} of ${reqId}: stored but its request is ${state?.status ?? 'unknown'}`);
  }
  return {
    events,
    requests: rebuilt.requests.size,
    accounts: rebuilt.accounts.size,
    keys: rebuilt.keys.size,
    differences: differences.slice(0, maxDifferences),
  };
};
