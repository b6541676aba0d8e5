import { lineRequestId } from '../../domain/batch/lines.js';
import type { BatchView } from '../../domain/batch/state.js';
import { type BatchStep, inChunks, namesOf, readChunkLines } from './batchWork.js';

/**
 * Cancels the lines that wait (and, for a cancel, those running): a batch cancelled, past its window, or whose
 * housekeeping failed.
 */
export const cancelLines = async ({ deps, keep }: BatchStep, view: BatchView) => {
  const { batchId } = view.state.context;
  const running = view.state.status === 'cancelling';
  for await (const names of inChunks(namesOf(deps, view), readChunkLines)) {
    // Lines that need nothing are read too: the lease must outlast the pass, however few it cancels.
    await keep();
    const reqIds = names.map((line) => lineRequestId(batchId, line.line));
    // Their states only: a line's prompt or answer is no concern of a cancel.
    const states = await deps.store.reads.requests(reqIds);
    const cancels = reqIds.flatMap((reqId, i) => {
      const status = states[i]?.status;
      if (status !== 'waiting' && !(running && status === 'processing')) return [];
      return [
        deps.send({ type: 'Cancel', reqId, now: deps.now() }).then((outcome) => {
          // Durably cancelled: a model call for it in this process is aborted (another process's ends by itself).
          if (status === 'processing' && 'events' in outcome) deps.cancelRunning?.(reqId);
        }),
      ];
    });
    await Promise.all(cancels);
  }
};
