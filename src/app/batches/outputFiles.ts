import type { WrittenFile } from '../../domain/batch/decider.js';
import { lineRequestId } from '../../domain/batch/lines.js';
import type { BatchView } from '../../domain/batch/state.js';
import type { RequestState } from '../../domain/request/state.js';
import type { StoredRequest } from '../../ports/Store.js';
import { eventLoopPace } from '../eventLoopPace.js';
import type { RequestView } from '../Requests.js';
import { answerOf } from '../storedInput.js';
import { type BatchStep, inChunks, type LineName, namesOf, readChunkLines } from './batchWork.js';
import { jsonLinePieces } from './jsonLinePieces.js';

const outputLineId = (reqId: string) => `batch_req_${reqId.slice('req_'.length)}`;

/**
 * Characters of answers read from the store at once while the output file is written: the completed lines of a chunk
 * are read in groups whose answers (`responseChars`) add up to at most this, a longer answer alone. So what is held
 * at once is bounded by this or by one answer, not by 64 of them (at 8 MiB an answer, 512 MiB).
 */
export const answerReadChars = 1024 * 1024;

/** The indexes of `completed` in groups whose answers add up to at most `answerReadChars` (a longer one alone). */
const answerGroups = (completed: readonly number[], states: readonly (RequestState | undefined)[]): number[][] => {
  const groups: number[][] = [];
  let group: number[] = [];
  let chars = 0;
  for (const i of completed) {
    const answerChars = states[i]?.context.responseChars ?? 0;
    if (group.length > 0 && chars + answerChars > answerReadChars) {
      groups.push(group);
      group = [];
      chars = 0;
    }
    group.push(i);
    chars += answerChars;
  }
  if (group.length > 0) groups.push(group);
  return groups;
};

/** What a line that never ran is told, by how its batch ended (or why it queued no more lines). */
const notRunOf = (context: BatchView['state']['context']) => {
  const { ending, quotaSpent } = context;
  if (quotaSpent !== undefined && ending === 'completed')
    return {
      code: 'insufficient_quota',
      message: `the account's token budget (${quotaSpent}) was used up before this line was run`,
    };
  if (ending === 'expired') return { code: 'batch_expired', message: 'the batch expired before this line was run' };
  if (ending === 'failed')
    return { code: 'batch_failed', message: 'the batch failed before this line was run (its errors say why)' };
  return { code: 'batch_cancelled', message: 'the batch was cancelled before this line was run' };
};

/**
 * Writes one of the batch's two files: every line that belongs in it, as it is read, a line (or a piece of a long
 * one) at a time, so that no answer's size, and no number of them, makes one string or one buffer of a file's part.
 */
const writeFile = async (
  { deps, keep }: BatchStep,
  view: BatchView,
  kind: 'output' | 'error',
): Promise<{ file: WrittenFile | undefined; lines: number }> => {
  const { batchId, endpoint } = view.state.context;
  const fileId = deps.newFileId();
  let lines = 0;
  const notRun = notRunOf(view.state.context);

  /** A completed line's entry in the output file, its answer's text given apart (it may be long). */
  const outputLine = (line: LineName, stored: StoredRequest) => {
    const reqId = lineRequestId(batchId, line.line);
    const answer = answerOf(stored.text ?? '', stored.state.context.output);
    const entryOf = (text: string) => {
      const requestView: RequestView = {
        state: stored.state,
        status: 'completed',
        response: text,
        toolCalls: answer.toolCalls.length === 0 ? undefined : answer.toolCalls,
      };
      return {
        id: outputLineId(reqId),
        custom_id: line.customId,
        response: { status_code: 200, request_id: reqId, body: deps.endpoints.answer(endpoint, requestView) },
        error: null,
      };
    };
    return jsonLinePieces(answer.text, entryOf);
  };

  /** A line's entry in the error file (none for a completed line): it failed for good, or never ran. */
  const errorLine = (line: LineName, state: RequestState | undefined): object | undefined => {
    const reqId = lineRequestId(batchId, line.line);
    const base = { id: outputLineId(reqId), custom_id: line.customId };
    if (state?.status === 'completed') return undefined;
    if (state?.status === 'failed')
      return {
        ...base,
        response: {
          status_code: 500,
          request_id: reqId,
          body: deps.endpoints.failure(endpoint, { state, status: 'failed' }),
        },
        error: null,
      };
    return { ...base, response: null, error: notRun };
  };

  async function* text(): AsyncGenerator<Uint8Array> {
    const pace = eventLoopPace();
    // The states of a chunk of lines at once (one statement on PostgreSQL); the answers of the completed ones after,
    // in groups bounded by their size.
    for await (const names of inChunks(namesOf(deps, view), readChunkLines)) {
      // Counted in lines read, not lines written: a pass that writes few of them (the output file of a batch that
      // expired or was cancelled early, the error file of one where a few lines failed) reads them all, and its
      // lease must outlast it.
      await keep();
      const reqIds = names.map((line) => lineRequestId(batchId, line.line));
      const states = await deps.store.reads.requests(reqIds);
      if (kind === 'error') {
        for (const [i, line] of names.entries()) {
          const entry = errorLine(line, states[i]);
          if (entry === undefined) continue;
          lines++;
          await pace();
          yield Buffer.from(`${JSON.stringify(entry)}\n`);
        }
        continue;
      }
      const completed = states.flatMap((state, i) => (state?.status === 'completed' ? [i] : []));
      for (const group of answerGroups(completed, states)) {
        const stored = await deps.store.reads.requestsWithText(group.map((i) => reqIds[i] as string));
        for (const [j, i] of group.entries()) {
          const request = stored[j];
          if (request?.state.status !== 'completed') continue;
          lines++;
          for (const piece of outputLine(names[i] as LineName, request)) {
            await pace();
            yield piece;
          }
        }
      }
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

/**
 * Finalizing: the output and error files written from the lines' requests, then the batch ended with them. What it
 * wrote is removed when the end is refused (another process ended it, or the operator cancelled it meanwhile) or when
 * it stops before asking for the end; not when the end's write failed for the store (it may have been made: the sweep
 * removes bytes no file names).
 */
export const finalizeBatch = async (step: BatchStep, view: BatchView) => {
  const { deps, sendBatch } = step;
  const { batchId } = view.state.context;
  const written: WrittenFile[] = [];
  const removeWritten = async () => {
    for (const file of written) await deps.store.files.remove(file.fileId);
  };
  let endAsked = false;
  try {
    const output = await writeFile(step, view, 'output');
    if (output.file !== undefined) written.push(output.file);
    // Every line completed (all queued, none failed): the error file would be empty, and is not read for.
    const total = view.state.context.total ?? 0;
    const clean = output.lines === total && view.counts.queued === total;
    const errors = clean ? { file: undefined, lines: 0 } : await writeFile(step, view, 'error');
    if (errors.file !== undefined) written.push(errors.file);
    endAsked = true;
    const ended = await sendBatch(batchId, {
      type: 'EndBatch',
      owner: deps.owner,
      outputFile: output.file,
      errorFile: errors.file,
      completed: output.lines,
      failed: errors.lines,
      now: deps.now(),
    });
    if (ended === undefined) await removeWritten();
  } catch (error) {
    // Best effort: the failure is what the caller hears; bytes left behind are swept once no file names them.
    if (!endAsked) await removeWritten().catch(() => undefined);
    throw error;
  }
};
