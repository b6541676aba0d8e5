import type { BatchView } from '../../domain/batch/state.js';
import { StorageFault } from '../../ports/Store.js';
import { type BatchStep, LostLease } from './batchWork.js';

/**
 * Whether a step's error is waited out rather than counted: a fault of the store (its disk, a database out of reach)
 * mends by itself, and a lost lease means another process does the work. The batch's window bounds both: it expires.
 */
export const isWaitedOut = (error: unknown): boolean => error instanceof LostLease || error instanceof StorageFault;

/** What an error says, for the batch's errors and the log: its name and message, never its stack. */
const reasonOf = (error: unknown): string =>
  error instanceof Error ? `${error.name}: ${error.message}` : String(error);

/**
 * Records that a step of the batch's housekeeping failed (any error but those waited out: a bug, a `RangeError`, a
 * line that no longer validates), durably, as an event of the batch: every process and node counts the same failures,
 * and the machine ends the step after a few (`maxWorkFailures`), failing the batch with the reason. The log gets one
 * line per failure, and the stack only once, with the failure that ends the step.
 */
export const recordWorkFailure = async ({ deps, sendBatch }: BatchStep, view: BatchView, error: unknown) => {
  const { batchId } = view.state.context;
  const step = view.state.status;
  const reason = reasonOf(error);
  const recorded = await sendBatch(batchId, { type: 'RecordWorkFailure', owner: deps.owner, reason, now: deps.now() });
  if (recorded === undefined) {
    // Moved on meanwhile (another process took it over, or it ended): that process counts its own.
    deps.log.debug({ batchId, step, reason }, 'batch work failed; the batch moved on meanwhile');
    return;
  }
  const after = await deps.store.reads.batch(batchId);
  const status = after?.state.status;
  if (status === step)
    deps.log.warn(
      { batchId, step, reason, failures: after?.state.context.stepFailures },
      'batch work failed; it is tried again',
    );
  else deps.log.error({ err: error, batchId, step, status }, `batch work failed for good; the batch is now ${status}`);
};
