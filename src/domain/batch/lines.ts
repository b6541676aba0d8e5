import type { RequestStatus } from '../request/state.js';
import type { BatchCounts } from './state.js';

const base64url = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'.split('').sort().join('');
/** Six characters of base64url (in their byte order, so that ids sort by line) hold line numbers up to 2^36. */
const lineChars = 6;

/**
 * The request id of a batch's line (1-based): the batch's id body less its last characters, then the line number.
 * Made the same way every time, so a process that queues a batch's lines again after a crash makes the same ids and
 * the store refuses the ones already queued: no line is queued twice. It is of the request id form (`req_` + 34).
 */
export const lineRequestId = (batchId: string, line: number): string => {
  const body = batchId.slice('batch_'.length, 'batch_'.length + 28);
  let code = '';
  let rest = line;
  for (let i = 0; i < lineChars; i++) {
    code = (base64url[rest % 64] as string) + code;
    rest = Math.floor(rest / 64);
  }
  return `req_${body}${code}`;
};

const ended = (status: RequestStatus) =>
  status === 'completed' || status === 'failed' || status === 'cancelled' || status === 'expired';

/**
 * What a line's move from `before` to `after` adds to its batch's counts: queued when it is made; completed (with its
 * tokens and its answer's characters, kept) or failed (failed, cancelled, expired unfinished) when it ends. A
 * completed line that later expires has its answer deleted: it is kept no more.
 */
export const countsDeltaOf = (
  before: { readonly status: RequestStatus },
  after: {
    readonly status: RequestStatus;
    readonly context: {
      readonly inputTokens?: number | undefined;
      readonly outputTokens?: number | undefined;
      readonly responseChars?: number | undefined;
    };
  },
): BatchCounts | undefined => {
  const queued = before.status === 'none' && after.status !== 'none' ? 1 : 0;
  const ends = !ended(before.status) && ended(after.status);
  const answerDropped = before.status === 'completed' && after.status !== 'completed';
  if (queued === 0 && !ends && !answerDropped) return undefined;
  const completed = ends && after.status === 'completed';
  const answer = after.context.responseChars ?? 0;
  return {
    queued,
    completed: completed ? 1 : 0,
    failed: ends && !completed ? 1 : 0,
    inputTokens: completed ? (after.context.inputTokens ?? 0) : 0,
    outputTokens: completed ? (after.context.outputTokens ?? 0) : 0,
    answerChars: completed ? answer : 0,
    keptAnswerChars: completed ? answer : answerDropped ? -answer : 0,
  };
};

export const addCounts = (a: BatchCounts, b: BatchCounts): BatchCounts => ({
  queued: a.queued + b.queued,
  completed: a.completed + b.completed,
  failed: a.failed + b.failed,
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens,
  answerChars: a.answerChars + b.answerChars,
  keptAnswerChars: a.keptAnswerChars + b.keptAnswerChars,
});
