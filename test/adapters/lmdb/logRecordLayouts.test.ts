import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { decodeLogRecord, encodeLogRecord } from '../../../src/adapters/lmdb/logRecord.js';
import type { StoredEvent } from '../../../src/domain/events.js';

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

  const unpacked = (bytes: Buffer) => new Packr({ useRecords: false }).unpack(bytes) as unknown[];

  it('writes requests and accounts without batch fields in layout 3 or 4, the same bytes as before batches (it can be rolled back to)', () => {
    const account = { type: 'AccountCreated', accountId: 'acc_1', email: 'a@example.com', plan: 'free', at: 1, seq: 1 };
    const plain = [account, { ...queued, seq: 2 }] as unknown as StoredEvent[];
    expect(unpacked(encodeLogRecord(plain))[0]).toBe(3);
    const kept = [{ ...queued, metadata: '{"team":"a"}', seq: 1 }] as unknown as StoredEvent[];
    // As layout 4 wrote it before batches: RequestQueued (type code 0) with twelve fields, none for a batch's line.
    const strings = ['req_a', 'acc_1', 'key_1', 'echo', '{"team":"a"}'];
    const values = [0, 1, 2, 3, 5, 1_000, 2_000, -1, -1, -1, null, 4];
    expect(encodeLogRecord(kept)).toEqual(new Packr({ useRecords: false }).pack([4, 1, strings, [0], values]));
    expect(decodeLogRecord(encodeLogRecord(kept))).toEqual(kept);
  });

  it('writes a record holding a batch’s lines in layout 5, and reads back their batch and custom_id only where a line has them', () => {
    const batchId = 'batch_0123456789abcdefghijkl';
    const events = [
      { ...queued, batchId, customId: 'line-1 ✓', seq: 1 },
      { ...queued, reqId: 'req_b', batchId, seq: 2 },
      { ...queued, reqId: 'req_c', metadata: '{"k":"v"}', seq: 3 },
      { ...queued, reqId: 'req_d', seq: 4 },
    ] as unknown as StoredEvent[];
    const bytes = encodeLogRecord(events);
    expect(unpacked(bytes)[0]).toBe(5);
    const read = decodeLogRecord(bytes);
    expect(read).toEqual(events);
    expect(Object.keys(read[1] as object)).not.toContain('customId');
    for (const event of read.slice(2)) expect(Object.keys(event)).not.toContain('batchId');
  });

  it('writes batch and file events in layout 5 and reads back every one as written, optional fields only where present', () => {
    const batchId = 'batch_0123456789abcdefghijkl';
    const events = [
      {
        type: 'FileCreated',
        fileId: 'file-in',
        accountId: 'acc_1',
        purpose: 'batch',
        filename: 'in é.jsonl',
        bytes: 2_048,
        sha256: 'ab'.repeat(32),
        at: 10,
      },
      {
        type: 'FileCreated',
        fileId: 'file-tmp',
        accountId: 'acc_1',
        purpose: 'batch',
        filename: 'tmp.jsonl',
        bytes: 0,
        sha256: 'cd'.repeat(32),
        at: 11,
        expiresAt: 99,
      },
      {
        type: 'BatchCreated',
        batchId,
        accountId: 'acc_1',
        keyId: 'key_1',
        endpoint: '/v1/chat/completions',
        inputFileId: 'file-in',
        completionWindow: '24h',
        at: 12,
        expiresAt: 86_400_012,
        metadata: '{"job":"nightly"}',
        outputExpiresAfterSeconds: 3_600,
      },
      {
        type: 'BatchCreated',
        batchId: 'batch_other',
        accountId: 'acc_1',
        keyId: 'key_1',
        endpoint: '/v1/responses',
        inputFileId: 'file-in',
        completionWindow: '24h',
        at: 13,
        expiresAt: 86_400_013,
      },
      { type: 'BatchTaken', batchId, owner: 'proc_1', leaseUntil: 60_014, at: 14 },
      {
        type: 'BatchValidationFailed',
        batchId: 'batch_other',
        owner: 'proc_1',
        errors: '[{"code":"invalid_json","line":2}]',
        at: 15,
      },
      { type: 'BatchStarted', batchId, owner: 'proc_1', total: 3, model: 'echo', at: 16 },
      { type: 'BatchStarted', batchId: 'batch_third', owner: 'proc_1', total: 1, at: 16 },
      { type: 'BatchCancelRequested', batchId, at: 17 },
      { type: 'BatchWindowClosed', batchId: 'batch_third', at: 18 },
      { type: 'BatchFinalizing', batchId, owner: 'proc_1', queued: 2, done: 2, at: 19 },
      {
        type: 'BatchEnded',
        batchId,
        owner: 'proc_1',
        outputFileId: 'file-out',
        errorFileId: 'file-err',
        completed: 1,
        failed: 1,
        at: 20,
      },
      { type: 'BatchEnded', batchId: 'batch_third', owner: 'proc_1', completed: 0, failed: 0, at: 21 },
      { type: 'FileDeleted', fileId: 'file-tmp', at: 22, reason: 'expired' },
      { type: 'FileDeleted', fileId: 'file-in', at: 23 },
    ].map((event, i) => ({ ...event, seq: 100 + i })) as unknown as StoredEvent[];
    const bytes = encodeLogRecord(events);
    expect(unpacked(bytes)[0]).toBe(5);
    const read = decodeLogRecord(bytes);
    expect(read).toEqual(events);
    // Absent optional fields stay absent, also when the event before of the same type had them.
    const keysOf = (i: number) => Object.keys(read[i] as object);
    expect(keysOf(0)).not.toContain('expiresAt');
    expect(keysOf(3)).not.toContain('metadata');
    expect(keysOf(3)).not.toContain('outputExpiresAfterSeconds');
    expect(keysOf(7)).not.toContain('model');
    expect(keysOf(12)).not.toContain('outputFileId');
    expect(keysOf(12)).not.toContain('errorFileId');
    expect(keysOf(14)).not.toContain('reason');
  });

  it('writes a failure that says what its caller is told in layout 6, read back as written, and other failures as before', () => {
    const unpacked = (bytes: Buffer) => new Packr({ useRecords: false }).unpack(bytes) as unknown[];
    const plain = [
      { type: 'RequestFailed', reqId: 'req_a', reason: 'gave up after 3 attempts: x', at: 5, seq: 1 },
    ] as unknown as StoredEvent[];
    expect(unpacked(encodeLogRecord(plain))[0]).toBe(3);
    expect(decodeLogRecord(encodeLogRecord(plain))).toEqual(plain);
    const told = [
      {
        type: 'RequestFailed',
        reqId: 'req_b',
        reason: 'failed for good at attempt 1: upstream http://u/v1 answered 404: not found',
        at: 6,
        owner: 'proc_1',
        attempt: 1,
        said: "the model's upstream refused the request (404)",
        permanent: true,
        seq: 2,
      },
      { type: 'RequestFailed', reqId: 'req_c', reason: 'gave up', at: 7, seq: 3 },
    ] as unknown as StoredEvent[];
    const bytes = encodeLogRecord(told);
    expect(unpacked(bytes)[0]).toBe(6);
    const read = decodeLogRecord(bytes);
    expect(read).toEqual(told);
    expect(Object.keys(read[1] as object)).not.toContain('permanent');
  });

  it("writes webhook events and a Responses request's face in layout 7, read back as written, and other records as before", () => {
    const unpacked = (bytes: Buffer) => new Packr({ useRecords: false }).unpack(bytes) as unknown[];
    const queued = {
      type: 'RequestQueued',
      reqId: 'req_a',
      accountId: 'acct_a',
      keyId: 'key_a',
      model: 'echo',
      promptChars: 5,
      at: 1,
      expiresAt: 2,
    };
    expect(unpacked(encodeLogRecord([{ ...queued, seq: 1 }] as unknown as StoredEvent[]))[0]).toBe(3);
    const webhooks = [
      { ...queued, face: 'responses', seq: 1 },
      {
        type: 'WebhookEndpointAdded',
        endpointId: 'whep_AAAAAAAAAAAAAAAA',
        accountId: 'acct_a',
        url: 'https://hooks.example.com/a',
        events: ['request.completed', 'batch.completed'],
        secretId: 'sec_a',
        at: 3,
        seq: 2,
      },
      {
        type: 'WebhookEndpointAdded',
        endpointId: 'whep_B',
        accountId: 'acct_a',
        url: 'https://b',
        events: [],
        secretId: 's',
        at: 3,
        seq: 3,
      },
      {
        type: 'WebhookDeliveryDue',
        deliveryId: 'wh_x',
        endpointId: 'whep_AAAAAAAAAAAAAAAA',
        accountId: 'acct_a',
        eventId: 'evt_x',
        eventType: 'request.completed',
        dataId: 'req_a',
        createdAt: 4,
        giveUpAt: 5,
        at: 4,
        seq: 4,
      },
      {
        type: 'WebhookAttemptStarted',
        deliveryId: 'wh_x',
        endpointId: 'whep_A',
        attempt: 1,
        owner: 'p',
        leaseUntil: 9,
        at: 5,
        seq: 5,
      },
      {
        type: 'WebhookAttemptFailed',
        deliveryId: 'wh_x',
        endpointId: 'whep_A',
        retryAt: 8,
        at: 6,
        attempt: 1,
        owner: 'p',
        status: 500,
        latencyMs: 12,
        error: 'answered 500',
        seq: 6,
      },
      {
        type: 'WebhookAttemptFailed',
        deliveryId: 'wh_x',
        endpointId: 'whep_A',
        retryAt: 9,
        at: 7,
        attempt: 2,
        error: 'refused',
        seq: 7,
      },
      {
        type: 'WebhookDelivered',
        deliveryId: 'wh_x',
        endpointId: 'whep_A',
        at: 8,
        attempt: 3,
        status: 204,
        latencyMs: 3,
        seq: 8,
      },
      {
        type: 'WebhookDeliveryGaveUp',
        deliveryId: 'wh_y',
        endpointId: 'whep_A',
        reason: 'endpoint_removed',
        at: 9,
        seq: 9,
      },
      { type: 'WebhookRedeliveryRequested', deliveryId: 'wh_y', endpointId: 'whep_A', giveUpAt: 99, at: 10, seq: 10 },
      {
        type: 'WebhookSecretRotated',
        endpointId: 'whep_A',
        secretId: 's2',
        previousSecretId: 's1',
        previousValidUntil: 50,
        at: 11,
        seq: 11,
      },
      { type: 'WebhookEndpointDisabled', endpointId: 'whep_A', failingSince: 1, at: 12, seq: 12 },
      { type: 'WebhookEndpointEnabled', endpointId: 'whep_A', at: 13, seq: 13 },
      { type: 'WebhookEndpointRemoved', endpointId: 'whep_A', at: 14, seq: 14 },
    ] as unknown as StoredEvent[];
    const bytes = encodeLogRecord(webhooks);
    expect(unpacked(bytes)[0]).toBe(7);
    expect(decodeLogRecord(bytes)).toEqual(webhooks);
  });
  it("writes an upload's reservation events in layout 8 (which an airs before them refuses by its version), read back as written", () => {
    const unpacked = (bytes: Buffer) => new Packr({ useRecords: false }).unpack(bytes) as unknown[];
    const file = { fileId: 'file-a', accountId: 'acct_a' };
    const events = [
      { type: 'FileUploadStarted', ...file, reservedBytes: 1_024, at: 1, heldUntil: 60_001, seq: 1 },
      {
        type: 'FileCreated',
        ...file,
        purpose: 'batch',
        filename: 'a.jsonl',
        bytes: 900,
        sha256: 'f'.repeat(64),
        at: 1,
        seq: 2,
      },
      { type: 'FileUploadEnded', ...file, at: 2, outcome: 'created', seq: 3 },
      { type: 'FileUploadEnded', fileId: 'file-b', accountId: 'acct_a', at: 3, outcome: 'lapsed', seq: 4 },
    ] as unknown as StoredEvent[];
    const bytes = encodeLogRecord(events);
    expect(unpacked(bytes)[0]).toBe(8);
    expect(decodeLogRecord(bytes)).toEqual(events);
    // A file's events alone stay in layout 5, as before.
    expect(unpacked(encodeLogRecord([events[1] as StoredEvent]))[0]).toBe(5);
  });

  it("writes an answer's time to first token in layout 9, read back as written, and an answer without one as before", () => {
    const unpacked = (bytes: Buffer) => new Packr({ useRecords: false }).unpack(bytes) as unknown[];
    const timed = [
      {
        type: 'RequestCompleted',
        reqId: 'req_t',
        responseChars: 3,
        at: 5,
        owner: 'p',
        attempt: 1,
        firstTokenMs: 412,
        seq: 1,
      },
    ] as unknown as StoredEvent[];
    const bytes = encodeLogRecord(timed);
    expect(unpacked(bytes)[0]).toBe(9);
    expect(decodeLogRecord(bytes)).toEqual(timed);
    // Without one, the record stays in layout 3: an airs before issue 41 reads it.
    const plain = [
      { type: 'RequestCompleted', reqId: 'req_u', responseChars: 3, at: 5, seq: 2 },
    ] as unknown as StoredEvent[];
    expect(unpacked(encodeLogRecord(plain))[0]).toBe(3);
    expect(decodeLogRecord(encodeLogRecord(plain))).toEqual(plain);
  });

  it("writes a request's deadline and a cancel's reason in layout 11, read back as written, and a layout-10 record as before", () => {
    const unpacked = (bytes: Buffer) => new Packr({ useRecords: false }).unpack(bytes) as unknown[];
    const events = [
      { ...queued, deadlineAt: 1_090, seq: 1 },
      { ...queued, reqId: 'req_b', seq: 2 },
      { type: 'RequestCancelled', reqId: 'req_a', at: 1_090, reason: 'deadline', seq: 3 },
      { type: 'RequestCancelled', reqId: 'req_b', at: 1_091, seq: 4 },
    ] as unknown as StoredEvent[];
    const bytes = encodeLogRecord(events);
    expect(unpacked(bytes)[0]).toBe(11);
    const read = decodeLogRecord(bytes);
    expect(read).toEqual(events);
    expect(Object.keys(read[3] as object)).not.toContain('reason');
    // Without either, the record stays in the layout an airs before deadlines reads.
    expect(unpacked(encodeLogRecord(events.slice(1, 2).concat(events.slice(3))))[0]).toBe(3);
    // Layout 10, by hand: RequestCancelled (type code 16) had two fields, RequestQueued (0) sixteen.
    const strings = ['req_a', 'acc_1', 'key_1', 'echo'];
    const queuedValues = [0, 1, 2, 3, 5, 1_000, 2_000, -1, -1, -1, null, -1, -1, -1, -1, null];
    const old = new Packr({ useRecords: false }).pack([10, 5, strings, [0, 16], [...queuedValues, 0, 1_500]]);
    expect(decodeLogRecord(old)).toEqual([
      { ...queued, seq: 5 },
      { type: 'RequestCancelled', reqId: 'req_a', at: 1_500, seq: 6 },
    ]);
  });
});
