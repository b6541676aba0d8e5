/** A batch's commands decided in the write: its input file, the bound of open batches, its output files. */
import { openBatchesCounter } from './accountCounters.js';
import { decideBatch } from './batch/decider.js';
import { initialBatchState, noCounts } from './batch/state.js';
import type { Command, DecisionReads } from './commandTypes.js';
import { AccountLimitReached, Refused } from './errors.js';
import type { DomainEvent } from './events.js';
import { decideFile } from './file/decider.js';

/** A batch's command; its end makes its output files exist in the same write. */
export const decideBatchCommand = (reads: DecisionReads, { batchId, command }: Extract<Command, { type: 'Batch' }>) => {
  const view = reads.batch(batchId);
  if (command.type === 'CreateBatch') {
    // The input file is read inside the write: one deleted a moment before is not taken.
    const file = reads.file(command.inputFileId);
    if (file === undefined || file.accountId !== command.accountId)
      return new Refused({ message: `no file ${command.inputFileId}` });
    if (file.purpose !== 'batch')
      return new Refused({
        message: `file ${command.inputFileId} has purpose ${file.purpose}; a batch's input file has purpose batch`,
      });
    // The account's bound of open batches, decided here: two creates at once (two processes, two nodes) cannot both
    // take the last place.
    if (command.maxInProgress !== undefined && view === undefined) {
      const open = reads.accountCount(openBatchesCounter(command.accountId));
      if (open >= command.maxInProgress)
        return new AccountLimitReached({
          message: `this account has ${open} batches not ended; its plan allows ${command.maxInProgress} at once (maxBatchesInProgress): wait for one to end`,
          budget: 'batches',
          limit: command.maxInProgress,
          count: open,
        });
    }
  }
  const events = decideBatch(batchId, view?.state ?? initialBatchState, view?.counts ?? noCounts, command);
  if (events instanceof Refused || command.type !== 'EndBatch') return events instanceof Refused ? events : { events };
  // The output files come to exist with the batch's end, in the same write: a finalizer that lost its lease leaves
  // only bytes no file names (swept), never a file its account would see.
  const accountId = view?.state.context.accountId ?? '';
  const files: DomainEvent[] = [];
  for (const file of [command.outputFile, command.errorFile]) {
    if (file === undefined) continue;
    const created = decideFile(file.fileId, reads.file(file.fileId), {
      type: 'CreateFile',
      accountId,
      purpose: 'batch_output',
      filename: file.filename,
      bytes: file.bytes,
      sha256: file.sha256,
      now: command.now,
      expiresAt: file.expiresAt,
    });
    if (created instanceof Refused) return created;
    files.push(...created);
  }
  return { events: [...files, ...events] };
};
