import { lineRequestId } from '../../src/domain/batch/lines.js';
import type { Command } from '../../src/domain/commands.js';
import {
  batchCommand,
  batchIdOf,
  batchRunner,
  createAccount,
  createBatch,
  createFile,
  fileIdOf,
  lineSubmit,
  startBatch,
  takeBatch,
} from '../contract/fixtures.js';

/**
 * A log of batches ended by issue 40's new events, as the server writes them (for the verify tests of each store):
 * batch 1 fails validating (three `BatchWorkFailed`); batch 2 fails queueing, goes failing, its lines cancelled, and
 * ends failed with an error file; batch 3 is cancelled by the operator while finalizing (`BatchFinalizingCancelled`);
 * batch 4 fails writing its files and ends failed without them.
 */
const fail = (n: number, now: number): Command =>
  batchCommand(batchIdOf(n), { type: 'RecordWorkFailure', owner: batchRunner, reason: `TypeError: try ${now}`, now });
const cancelLine = (n: number, line: number, now: number): Command => ({
  type: 'Cancel',
  reqId: lineRequestId(batchIdOf(n), line),
  now,
});
const finalize = (n: number, now: number) =>
  batchCommand(batchIdOf(n), { type: 'FinalizeBatch', owner: batchRunner, now });

export const batchFailureWrites: readonly (readonly Command[])[] = [
  [createAccount(1), ...[1, 2, 3, 4].flatMap((n) => [createFile(fileIdOf(n)), createBatch(batchIdOf(n), fileIdOf(n))])],
  [1, 2, 3, 4].map((n) => takeBatch(batchIdOf(n))),
  [fail(1, 301), fail(1, 302), fail(1, 303), startBatch(batchIdOf(2), 2), startBatch(batchIdOf(3), 1)],
  [startBatch(batchIdOf(4), 1), lineSubmit(batchIdOf(2), 1), lineSubmit(batchIdOf(3), 1), lineSubmit(batchIdOf(4), 1)],
  [fail(2, 500), fail(2, 501), fail(2, 502), cancelLine(2, 1, 510), cancelLine(3, 1, 510), cancelLine(4, 1, 510)],
  [finalize(2, 520), finalize(3, 520), finalize(4, 520)],
  [
    batchCommand(batchIdOf(2), {
      type: 'EndBatch',
      owner: batchRunner,
      errorFile: { fileId: fileIdOf(9), filename: 'err.jsonl', bytes: 20, sha256: 'e'.repeat(64) },
      completed: 0,
      failed: 2,
      now: 530,
    }),
    batchCommand(batchIdOf(3), { type: 'CancelFinalizing', now: 530 }),
    fail(4, 540),
    fail(4, 541),
    fail(4, 542),
  ],
];

/** What the log leaves: each batch's final status. */
export const batchFailureEndings = {
  [batchIdOf(1)]: 'failed',
  [batchIdOf(2)]: 'failed',
  [batchIdOf(3)]: 'cancelled',
  [batchIdOf(4)]: 'failed',
} as const;
