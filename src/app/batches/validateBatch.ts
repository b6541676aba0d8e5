import type { BatchView } from '../../domain/batch/state.js';
import { type BatchStep, chunkLines, linesOf } from './batchWork.js';
import type { LineError } from './lineRules.js';

/** The most validation errors a failed batch lists (contract 16). */
const maxListedErrors = 1_000;

/**
 * Validating: every line of the input file checked as its route checks a body, all or nothing: the batch starts
 * with its count of lines (and its model, when every line names one), or fails with one error per bad line.
 */
export const validateBatch = async ({ deps, sendBatch, keep }: BatchStep, view: BatchView) => {
  const { batchId } = view.state.context;
  const { owner } = deps;
  const errors: LineError[] = [];
  const models = new Set<string>();
  let total = 0;
  for await (const line of linesOf(deps, view)) {
    total++;
    if (total > deps.maxLines) {
      errors.push({
        code: 'too_many_lines',
        line: line.line,
        message: `a batch has at most ${deps.maxLines} lines (batches.maxLines)`,
        param: null,
      });
      break;
    }
    if ('code' in line) {
      if (errors.length < maxListedErrors) errors.push(line);
    } else models.add(line.input.model);
    if (total % chunkLines === 0) await keep();
  }
  if (total === 0) errors.push({ code: 'empty_file', line: null, message: 'the input file has no lines', param: null });
  const now = deps.now();
  if (errors.length > 0) {
    await sendBatch(batchId, { type: 'FailValidation', owner, errors: JSON.stringify(errors), now });
    return;
  }
  const model = models.size === 1 ? [...models][0] : undefined;
  await sendBatch(batchId, { type: 'StartBatch', owner, total, model, now });
};
