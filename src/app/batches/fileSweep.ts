import { isRefusal } from '../../domain/commands.js';
import type { BatchRunnerDeps } from './batchWork.js';
import { endLapsedUploads } from './lapsedUploads.js';

/** Bytes no file names are removed once this old (an upload still being written is younger). */
const orphanAgeMs = 60 * 60 * 1000;

/** Ends lapsed uploads' reservations, deletes expired files and removes bytes that no file names (an upload cut by a
 * crash). */
export const sweepFiles = async (deps: BatchRunnerDeps) => {
  await endLapsedUploads(deps);
  const { store } = deps;
  const now = deps.now();
  for await (const { blobId, startedAt } of store.files.list()) {
    const file = await store.reads.file(blobId);
    if (file !== undefined && file.expiresAt !== undefined && file.expiresAt <= now) {
      const outcome = await deps.send({
        type: 'File',
        fileId: blobId,
        command: { type: 'DeleteFile', now, expired: true },
      });
      if (!('events' in outcome) || isRefusal(outcome)) continue;
    } else if (file !== undefined || startedAt > now - orphanAgeMs) continue;
    // An open batch still reads its input file, even once the file was deleted.
    if (!(await store.reads.isOpenBatchInput(blobId))) await store.files.remove(blobId);
  }
};
