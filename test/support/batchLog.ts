import { createHash } from 'node:crypto';
import type { BatchCommand } from '../../src/domain/batch/decider.js';
import { lineRequestId } from '../../src/domain/batch/lines.js';
import type { Command } from '../../src/domain/commands.js';
import type { FileCommand } from '../../src/domain/file/decider.js';

/**
 * A log with batches, as the server writes it (for the verify and replay tests): commands in the writes they are
 * committed in. Batch `done` has three lines that completed (and later expired), failed and were cancelled, and
 * ended; batch `open` runs, one line waiting; file `file_gone` was deleted. The lines' events interleave.
 */
export const owner = 'proc_test';
export const done = 'batch_0123456789abcdefghijklmnopqrstuv';
export const open = 'batch_zyxwvutsrqponmlkjihgfedcba987654';
export const line = (batchId: string, n: number) => lineRequestId(batchId, n);
/** A SHA-256 that no content has: the last character of a file's id, 64 times (for files whose bytes differ). */
export const sha = (c: string) => c.repeat(64);

/** The bytes of each file of this log, and what the log says of them (size and SHA-256, as an upload records). */
export const contentOf = (fileId: string): Buffer => Buffer.from(`{"file":"${fileId}"}\n`.repeat(5));
export const digestOf = (fileId: string) => ({
  bytes: contentOf(fileId).length,
  sha256: createHash('sha256').update(contentOf(fileId)).digest('hex'),
});

const file = (fileId: string, command: FileCommand): Command => ({ type: 'File', fileId, command });
const upload = (fileId: string, purpose: string, now: number): Command =>
  file(fileId, {
    type: 'CreateFile',
    accountId: 'acct_1',
    purpose,
    filename: `${fileId}.jsonl`,
    ...digestOf(fileId),
    now,
  });
const batch = (batchId: string, command: BatchCommand): Command => ({ type: 'Batch', batchId, command });
const createBatch = (batchId: string, inputFileId: string, now: number): Command[] => [
  batch(batchId, {
    type: 'CreateBatch',
    accountId: 'acct_1',
    keyId: 'key_1',
    endpoint: '/v1/chat/completions',
    inputFileId,
    completionWindow: '24h',
    windowMs: 86_400_000,
    now,
  }),
  batch(batchId, { type: 'TakeBatch', owner, leaseMs: 600_000, now }),
];
const lineSubmit = (batchId: string, n: number, now: number): Command => ({
  type: 'Submit',
  reqId: line(batchId, n),
  accountId: 'acct_1',
  keyId: 'key_1',
  model: 'echo',
  promptChars: 5,
  prompt: 'hello',
  ttlMs: 60_000,
  now,
  batchId,
  customId: `line-${n}`,
});
const start = (reqId: string, now: number): Command => ({ type: 'StartAttempt', reqId, now, owner, leaseMs: 30_000 });

export const batchLogWrites: readonly (readonly Command[])[] = [
  [upload('file_in1', 'batch', 1_000), upload('file_in2', 'batch', 1_000), upload('file_gone', 'batch', 1_000)],
  [...createBatch(done, 'file_in1', 1_100), ...createBatch(open, 'file_in2', 1_100)],
  [
    batch(done, { type: 'StartBatch', owner, total: 3, model: 'echo', now: 1_200 }),
    batch(open, { type: 'StartBatch', owner, total: 2, now: 1_200 }),
    lineSubmit(done, 1, 1_300),
    lineSubmit(done, 2, 1_300),
    lineSubmit(open, 1, 1_300),
    lineSubmit(done, 3, 1_300),
  ],
  [start(line(done, 1), 1_400), start(line(done, 2), 1_400)],
  [
    {
      type: 'RecordSuccess',
      reqId: line(done, 1),
      responseChars: 3,
      response: 'bye',
      inputTokens: 10,
      outputTokens: 4,
      now: 1_500,
      owner,
      attempt: 1,
    },
    {
      type: 'RecordFailure',
      reqId: line(done, 2),
      reason: 'the model refused',
      policy: { maxAttempts: 1, baseDelayMs: 1_000, maxDelayMs: 1_000 },
      now: 1_500,
      owner,
      attempt: 1,
    },
    { type: 'Cancel', reqId: line(done, 3), now: 1_500 },
    file('file_gone', { type: 'DeleteFile', accountId: 'acct_1', now: 1_500 }),
  ],
  [batch(done, { type: 'FinalizeBatch', owner, now: 1_600 })],
  [
    batch(done, {
      type: 'EndBatch',
      owner,
      outputFile: { fileId: 'file_out', filename: 'out.jsonl', ...digestOf('file_out') },
      completed: 1,
      failed: 2,
      now: 1_700,
    }),
    // A completed line that expires later does not count again.
    { type: 'Expire', reqId: line(done, 1), now: 70_000 },
  ],
];
