import { lineRequestId } from '../../domain/batch/lines.js';
import type { BatchView } from '../../domain/batch/state.js';
import { Refused } from '../../domain/errors.js';
import { storedInputOf } from '../storedInput.js';
import { type BatchStep, chunkLines, linesOf } from './batchWork.js';

/** Queues the lines not queued yet: those a crash left out are queued again; those queued are refused as such. */
export const queueLines = async ({ deps, keep }: BatchStep, view: BatchView) => {
  const { batchId, accountId, keyId, expiresAt, createdAt } = view.state.context;
  const windowMs = expiresAt - createdAt;
  // Lines are queued in order, a write at a time: all before the last write in flight are queued already.
  const skip = Math.max(0, view.counts.queued - chunkLines);
  let ordinal = 0;
  let pending: Promise<unknown>[] = [];
  let closed = false;
  const flush = async () => {
    const outcomes = await Promise.all(pending);
    pending = [];
    for (const outcome of outcomes) if (outcome instanceof Refused) closed = true;
    await keep();
  };
  for await (const line of linesOf(deps, view)) {
    ordinal++;
    if (ordinal <= skip) {
      if (ordinal % chunkLines === 0) await keep();
      continue;
    }
    if ('code' in line) throw new Error(`line ${line.line} of batch ${batchId} no longer validates: ${line.message}`);
    const now = deps.now();
    const stored = storedInputOf(line.input);
    pending.push(
      deps.send({
        type: 'Submit',
        reqId: lineRequestId(batchId, line.line),
        accountId,
        keyId,
        model: line.input.model,
        promptChars: stored.text.length,
        prompt: stored.text,
        // Kept until the batch's output is written: a whole window from now (at least what is left of the batch's),
        // then a request's lifetime. Counted from now, not from the batch's end: the lines of one write share an
        // expiry group (projection.ts), where one expiry for all 100,000 lines made every write rewrite one group
        // of them all.
        ttlMs: windowMs + deps.requestTtlMs,
        now,
        input: stored.kind,
        maxAttempts: deps.maxAttempts,
        metadata: line.input.metadata,
        batchId,
        customId: line.customId,
      }),
    );
    if (pending.length >= chunkLines) await flush();
    // Cancelled or past its window meanwhile: the store refuses further lines.
    if (closed) return;
  }
  await flush();
};
