import type { WrittenFile } from '../../domain/batch/decider.js';
import { lineRequestId } from '../../domain/batch/lines.js';
import type { BatchView } from '../../domain/batch/state.js';
import type { StoredRequest } from '../../ports/Store.js';
import type { RequestView } from '../Requests.js';
import { answerOf } from '../storedInput.js';
import { type BatchStep, inChunks, type LineName, namesOf, readChunkLines } from './batchWork.js';

const outputLineId = (reqId: string) => `batch_req_${reqId.slice('req_'.length)}`;

/** Writes one of the batch's two files: every line that belongs in it, as it is read. */
const writeFile = async (
  { deps, keep }: BatchStep,
  view: BatchView,
  kind: 'output' | 'error',
): Promise<{ file: WrittenFile | undefined; lines: number }> => {
  const { batchId, endpoint, ending } = view.state.context;
  const fileId = deps.newFileId();
  let lines = 0;
  const code = ending === 'expired' ? 'batch_expired' : 'batch_cancelled';
  const notRun =
    ending === 'expired'
      ? 'the batch expired before this line was run'
      : 'the batch was cancelled before this line was run';
  const entryOf = (line: LineName, stored: StoredRequest | undefined): object | undefined => {
    const reqId = lineRequestId(batchId, line.line);
    const status = stored?.state.status;
    const base = { id: outputLineId(reqId), custom_id: line.customId };
    if (stored !== undefined && status === 'completed') {
      if (kind === 'error') return undefined;
      const answer = answerOf(stored.text ?? '', stored.state.context.output);
      const requestView: RequestView = {
        state: stored.state,
        status: 'completed',
        response: answer.text,
        toolCalls: answer.toolCalls.length === 0 ? undefined : answer.toolCalls,
      };
      return {
        ...base,
        response: { status_code: 200, request_id: reqId, body: deps.endpoints.answer(endpoint, requestView) },
        error: null,
      };
    }
    if (kind === 'output') return undefined;
    return stored !== undefined && status === 'failed'
      ? {
          ...base,
          response: {
            status_code: 500,
            request_id: reqId,
            body: deps.endpoints.failure(endpoint, { state: stored.state, status: 'failed' }),
          },
          error: null,
        }
      : { ...base, response: null, error: { code, message: notRun } };
  };
  async function* text(): AsyncGenerator<Uint8Array> {
    // Read a chunk of lines' requests at a time (one statement on PostgreSQL), each chunk written as one piece.
    for await (const names of inChunks(namesOf(deps, view), readChunkLines)) {
      // Counted in lines read, not lines written: a pass that writes few of them (the output file of a batch that
      // expired or was cancelled early, the error file of one where a few lines failed) reads them all, and its
      // lease must outlast it.
      await keep();
      const stored = await deps.store.reads.requestsWithText(names.map((line) => lineRequestId(batchId, line.line)));
      let piece = '';
      names.forEach((line, i) => {
        const entry = entryOf(line, stored[i]);
        if (entry === undefined) return;
        lines++;
        piece += `${JSON.stringify(entry)}\n`;
      });
      if (piece.length > 0) yield Buffer.from(piece);
    }
  }
  const stored = await deps.store.files.write(fileId, text(), Number.MAX_SAFE_INTEGER, deps.now());
  if (lines === 0) {
    await deps.store.files.remove(fileId);
    return { file: undefined, lines };
  }
  const expiresAfter = view.state.context.outputExpiresAfterSeconds ?? deps.outputExpiresAfterSeconds;
  return {
    file: {
      fileId,
      filename: `${batchId}_${kind}.jsonl`,
      bytes: stored.bytes,
      sha256: stored.sha256,
      expiresAt: deps.now() + expiresAfter * 1000,
    },
    lines,
  };
};

/** Finalizing: the output and error files written from the lines' requests, then the batch ended with them. */
export const finalizeBatch = async (step: BatchStep, view: BatchView) => {
  const { deps, sendBatch } = step;
  const { batchId } = view.state.context;
  const output = await writeFile(step, view, 'output');
  // Every line completed (all queued, none failed): the error file would be empty, and is not read for.
  const total = view.state.context.total ?? 0;
  const clean = output.lines === total && view.counts.queued === total;
  const errors = clean ? { file: undefined, lines: 0 } : await writeFile(step, view, 'error');
  const ended = await sendBatch(batchId, {
    type: 'EndBatch',
    owner: deps.owner,
    outputFile: output.file,
    errorFile: errors.file,
    completed: output.lines,
    failed: errors.lines,
    now: deps.now(),
  });
  // Another process ended it (this one lost its lease): what this one wrote names nothing.
  if (ended === undefined)
    for (const file of [output.file, errors.file]) if (file !== undefined) await deps.store.files.remove(file.fileId);
};
