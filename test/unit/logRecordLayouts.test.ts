import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { decodeLogRecord, encodeLogRecord } from '../../src/adapters/lmdb/logRecord.js';
import type { StoredEvent } from '../../src/domain/events.js';

const queued = {
  type: 'RequestQueued',
  reqId: 'req_a',
  accountId: 'acc_1',
  keyId: 'key_1',
  model: 'echo',
  promptChars: 5,
  at: 1_000,
  expiresAt: 2_000,
} as const;

describe('Log records across layout versions', () => {
  it('reads a record written by the first layout (before idempotency keys and cancellation) as the events it held', () => {
    // Layout 1, by hand: [version, first seq, strings, type codes, values]; RequestQueued had seven fields.
    const strings = ['req_a', 'acc_1', 'key_1', 'echo'];
    const old = new Packr({ useRecords: false }).pack([1, 7, strings, [0, 5], [0, 1, 2, 3, 5, 1_000, 2_000, 0, 3_000]]);
    expect(decodeLogRecord(old)).toEqual([
      { ...queued, seq: 7 },
      { type: 'RequestExpired', reqId: 'req_a', at: 3_000, seq: 8 },
    ]);
  });

  it('writes and reads back optional fields only where an event has them, whatever the order of events', () => {
    const events = [
      { ...queued, idempotencyKey: 'k-1', requestHash: 'h1', input: 'messages', seq: 1 },
      { ...queued, reqId: 'req_b', seq: 2 },
      { type: 'RequestCancelled', reqId: 'req_b', at: 1_500, seq: 3 },
      { ...queued, reqId: 'req_c', idempotencyKey: 'k-2', requestHash: 'h2', seq: 4 },
    ] as unknown as StoredEvent[];
    const read = decodeLogRecord(encodeLogRecord(events));
    expect(read).toEqual(events);
    expect(Object.keys(read[1] as object)).not.toContain('idempotencyKey');
    expect(Object.keys(read[3] as object)).not.toContain('input');
  });
});
