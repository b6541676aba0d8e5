import type { BatchRunnerDeps } from './batchWork.js';

/** Reservations ended per sweep, at most (the next sweep takes the rest). */
const perSweep = 1_000;

/**
 * Ends the reservations of uploads whose time is up with no word from their server (it died mid-upload): the decisions
 * ignore them already; this records their end, so the account's uploads view holds only uploads that may still be
 * streaming. Their bytes, if any were stored, name no file and are swept with the others.
 */
export const endLapsedUploads = async (deps: Pick<BatchRunnerDeps, 'store' | 'send' | 'now'>): Promise<void> => {
  const now = deps.now();
  for (const { accountId, fileId } of await deps.store.reads.lapsedUploads(now, perSweep))
    await deps.send({ type: 'File', fileId, command: { type: 'EndUpload', accountId, now, lapsed: true } });
};
