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

  it('reads a record of the second layout (before usage was recorded) and writes usage only where a completion has it', () => {
    // Layout 2, by hand: RequestCompleted (type code 3) had three fields.
    const old = new Packr({ useRecords: false }).pack([2, 4, ['req_a'], [3], [0, 12, 5_000]]);
    expect(decodeLogRecord(old)).toEqual([
      { type: 'RequestCompleted', reqId: 'req_a', responseChars: 12, at: 5_000, seq: 4 },
    ]);
    const events = [
      {
        type: 'RequestCompleted',
        reqId: 'req_a',
        responseChars: 3,
        at: 1,
        inputTokens: 4,
        outputTokens: 0,
        finishReason: 'tool_calls',
        output: 'message',
        seq: 1,
      },
      { type: 'RequestCompleted', reqId: 'req_b', responseChars: 3, at: 2, seq: 2 },
      { type: 'RequestCompleted', reqId: 'req_c', responseChars: 3, at: 3, inputTokens: 7, outputTokens: 9, seq: 3 },
    ] as unknown as StoredEvent[];
    const read = decodeLogRecord(encodeLogRecord(events));
    expect(read).toEqual(events);
    expect(Object.keys(read[1] as object)).not.toContain('inputTokens');
    expect(Object.keys(read[2] as object)).not.toContain('output');
  });

  it('writes a record without metadata in layout 3, as before, and one with metadata in layout 4, read back as written', () => {
    const plain = [{ ...queued, seq: 1 }] as unknown as StoredEvent[];
    const unpacked = (bytes: Buffer) => new Packr({ useRecords: false }).unpack(bytes) as unknown[];
    expect(unpacked(encodeLogRecord(plain))[0]).toBe(3);
    const kept = [
      { ...queued, seq: 1 },
      { ...queued, reqId: 'req_b', metadata: '{"team":"a","note":"x"}', seq: 2 },
      { type: 'RequestCancelled', reqId: 'req_b', at: 1_500, seq: 3 },
    ] as unknown as StoredEvent[];
    const bytes = encodeLogRecord(kept);
    expect(unpacked(bytes)[0]).toBe(4);
    const read = decodeLogRecord(bytes);
    expect(read).toEqual(kept);
    expect(Object.keys(read[0] as object)).not.toContain('metadata');
  });
});
