/** A file's commands decided inside the write: uploads' reservations and files against what the account keeps. */
import { storedBytesCounter, storedFilesCounter } from './accountCounters.js';
import type { Command, DecisionReads } from './commandTypes.js';
import { Refused } from './errors.js';
import { decideFile } from './file/decider.js';
import type { FileState } from './file/state.js';
import { createFileRefusal, decideUpload, reservationTaken, type UploadFacts } from './file/uploadDecider.js';

const uploadFacts = (reads: DecisionReads, accountId: string, file: FileState | undefined): UploadFacts => ({
  file,
  uploads: reads.uploadsOf(accountId),
  storedBytes: reads.accountCount(storedBytesCounter(accountId)),
  storedFiles: reads.accountCount(storedFilesCounter(accountId)),
});

/** A file's command, or an upload's: decided against the account's room and places in this write. */
export const decideFileCommand = (reads: DecisionReads, { fileId, command }: Extract<Command, { type: 'File' }>) => {
  const file = reads.file(fileId);
  // An upload's reservation, and its file, are decided against what the account keeps and the other uploads hold, in
  // this write: two uploads at once (two processes, two nodes) cannot both take the last room or place.
  if (command.type === 'StartUpload' || command.type === 'EndUpload') {
    const events = decideUpload(fileId, uploadFacts(reads, command.accountId, file), command);
    return Array.isArray(events) ? { events } : events;
  }
  // An upload's file (it carries its bounds; a batch's output files never do) takes its reservation; the bytes of one
  // refused here, stored already, are then removed by the caller.
  const facts =
    command.type === 'CreateFile' && command.maxStoredBytes !== undefined && file === undefined
      ? uploadFacts(reads, command.accountId, file)
      : undefined;
  if (facts !== undefined && command.type === 'CreateFile') {
    const refused = createFileRefusal(fileId, facts, command);
    if (refused !== undefined) return refused;
  }
  const events = decideFile(fileId, file, command);
  if (events instanceof Refused) return events;
  if (facts === undefined || command.type !== 'CreateFile') return { events };
  return { events: [...events, ...reservationTaken(fileId, facts, command)] };
};
