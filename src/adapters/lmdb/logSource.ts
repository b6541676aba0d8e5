import type { LogSource } from '../../storage/logSource.js';
import { decodeMap, textBytesOf, viewEnd, viewMatches } from './codec.js';
import { type LmdbDatabases, lastSeqKey, requestKey } from './databases.js';
import { visitLogRecord } from './logRecord.js';

/**
 * An LMDB data directory's databases as a copy reads them (storage/logSource.ts): everything from one read
 * transaction, one snapshot whatever a process writes meanwhile, until `close`.
 */
export const lmdbLogSource = (dbs: LmdbDatabases): LogSource => {
  const transaction = dbs.root.useReadTransaction();
  const kept = {
    batch: dbs.batches,
    file: dbs.files,
    'webhook endpoint': dbs.webhookEndpoints,
    'webhook delivery': dbs.webhookDeliveries,
  } as const;
  return {
    lastSeq: () => (dbs.meta.get(lastSeqKey, { transaction }) as number | undefined) ?? 0,
    records: () =>
      dbs.log
        .getRange({ transaction })
        .map(({ key, value }) => ({ key, visit: (onEvent) => void visitLogRecord(value, onEvent) })),
    textOf: (reqId) => {
      const record = dbs.requests.get(requestKey(reqId), { transaction }) as Buffer | undefined;
      if (record === undefined) return undefined;
      return Buffer.from(textBytesOf(record)).toString('utf8');
    },
    requestRecords: () =>
      dbs.requests.getRange({ transaction }).map(({ key, value }) => ({
        reqId: Buffer.from(key).toString('utf8'),
        holds: (state) => viewMatches(state, value),
        text: () => Buffer.from(value.buffer, value.byteOffset + viewEnd(value), value.length - viewEnd(value)),
      })),
    kept: (kind) =>
      kept[kind]
        .getRange({ transaction })
        .map(({ key, value }) => ({ id: String(key), state: () => decodeMap(value) })),
    credentials: () => dbs.credentials.getRange({ transaction }).map(({ key, value }) => ({ key: String(key), value })),
    keyUses: () =>
      dbs.keyLastUsed.getRange({ transaction }).map(({ key, value }) => ({ keyId: String(key), at: value })),
    close: () => transaction.done(),
  };
};
