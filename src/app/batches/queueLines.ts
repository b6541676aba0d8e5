import { linesAheadCounter, linesWithRoom, storedBytesCounter } from '../../domain/accountCounters.js';
import { lineRequestId } from '../../domain/batch/lines.js';
import { type BatchView, linesDone, mayCloseWindow } from '../../domain/batch/state.js';
import { type Command, payloadBytesOf } from '../../domain/commands.js';
import { AccountLimitReached, QuotaExceeded, Refused } from '../../domain/errors.js';
import { eventLoopPace } from '../eventLoopPace.js';
import { type BatchStep, chunkLines } from './batchWork.js';
import { type JsonLine, jsonLines } from './jsonLines.js';
import { lineReferenceText } from './lineInput.js';
import { checkLine, lineChecksOf, maxCustomIdChars } from './lineRules.js';

type LineSubmit = Extract<Command, { type: 'Submit' }>;

/** How soon, and how late, a batch that waits (for its lines to end, or for room in its account's storage) looks
 * again: at the store's next change, but not sooner than the first (a busy store changes all the time). */
const lookAgainMs = { soonest: 50, latest: 1_000 };

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/**
 * Queues the lines not queued yet: those a crash left out are queued again; those queued are refused as such.
 *
 * Each line's request keeps where the line lies in the input file, not a copy of its prompt (lineInput.ts). A batch has
 * at most `maxLinesAhead` lines queued and not ended: more are queued as lines end, a write at a time. Each write's
 * lines take their place in this process's budget of lines in flight (lineBudget.ts) until the write is durable. A
 * line is queued only while its account has room for the answers of its lines not ended (`linesWithRoom`, decided in
 * the store's write, commands.ts: files and batches' answers against its plan's bound): the batch waits for room,
 * its window bounding the wait (past it, the window is closed here, and the batch takes no more lines).
 */
export const queueLines = async ({ deps, keep, sendBatch }: BatchStep, view: BatchView) => {
  const { batchId, accountId, keyId, expiresAt, createdAt, endpoint, inputFileId } = view.state.context;
  const windowMs = expiresAt - createdAt;
  // Lines are queued in order, a write at a time: all before the last write in flight are queued already.
  const skip = Math.max(0, view.counts.queued - chunkLines);
  const checks = lineChecksOf(deps, endpoint, await deps.allowedModelsOf?.(accountId));
  const maxStoredBytes = await deps.maxStoredBytes(accountId);
  const perWrite = Math.max(1, Math.min(chunkLines, deps.lineBudget.perAccount.lines, deps.maxLinesAhead));

  const submitOf = (source: JsonLine): LineSubmit => {
    if (!('text' in source)) throw new Error(`line ${source.line} of batch ${batchId} can no longer be read`);
    const line = checkLine(source, checks, new Set());
    let model: string;
    let customId: string;
    let metadata: string | undefined;
    if ('code' in line) {
      // Validated, but no longer valid (its model was removed from the config since, say): queued all the same, so
      // that its attempt, which checks it again, fails it for good with the reason (lineInput.ts).
      deps.log.info({ batchId, line: source.line, reason: line.message }, 'batch line no longer validates');
      const raw = parsedOrEmpty(source.text);
      model = typeof raw.body?.model === 'string' ? raw.body.model.slice(0, 256) : '';
      customId = typeof raw.custom_id === 'string' ? raw.custom_id.slice(0, maxCustomIdChars) : `line-${source.line}`;
    } else {
      ({ customId } = line);
      ({ model, metadata } = line.input);
    }
    return {
      type: 'Submit',
      reqId: lineRequestId(batchId, source.line),
      accountId,
      keyId,
      model,
      // A line's input is its line: its size is the line's (counted already, not made again).
      promptChars: source.text.length,
      prompt: lineReferenceText({
        file: inputFileId,
        offset: source.offset,
        bytes: source.bytes.byteLength,
        line: source.line,
        endpoint,
      }),
      // Kept until the batch's output is written: a whole window from now (at least what is left of the batch's),
      // then a request's lifetime. Counted from now, not from the batch's end: the lines of one write share an
      // expiry group (projection.ts), where one expiry for all 100,000 lines made every write rewrite one group
      // of them all.
      ttlMs: windowMs + deps.requestTtlMs,
      now: deps.now(),
      input: 'line',
      maxAttempts: deps.maxAttempts,
      metadata,
      batchId,
      customId,
      maxStoredBytes,
      answerRoom: deps.answerRoom(model),
    };
  };

  /**
   * Waits until the batch may have `wanted` more lines queued (or as many as half its lines ahead, when fewer are
   * wanted than that) and its account has room for the answers of at least one more (lines of `model`); how many it
   * may have then, or undefined once it takes no more lines.
   */
  const room = async (wanted: number, model: string): Promise<number | undefined> => {
    const enough = Math.min(wanted, Math.ceil(deps.maxLinesAhead / 2));
    for (;;) {
      await keep();
      const now = deps.now();
      const current = await deps.store.reads.batch(batchId);
      if (current === undefined || current.state.status !== 'in_progress') return undefined;
      // Past its window while it waited: closed here (this process holds the batch, so its tick passes it by).
      if (mayCloseWindow(current.state, now)) {
        await deps.send({ type: 'Batch', batchId, command: { type: 'CloseWindow', now } });
        return undefined;
      }
      // The account's token limits (contract 21): a budget used up stops the queueing for good (the rest of the
      // lines end failed with insufficient_quota); the tokens of the last minute at their limit make it wait.
      const tokens = await deps.tokenRefusal?.(accountId);
      if (tokens instanceof QuotaExceeded) {
        await sendBatch(batchId, { type: 'SpendQuota', owner: deps.owner, budget: tokens.budget, now });
        return undefined;
      }
      if (tokens !== undefined) {
        await sleep(Math.min(tokens.retryAfterSeconds * 1000, lookAgainMs.latest));
        continue;
      }
      const free = deps.maxLinesAhead - (current.counts.queued - linesDone(current.counts));
      if (free >= enough) {
        if (maxStoredBytes === undefined) return free;
        const account = {
          kept: await deps.store.reads.accountCount(storedBytesCounter(accountId)),
          ahead: await deps.store.reads.accountCount(linesAheadCounter(accountId)),
        };
        const fits = linesWithRoom(account, deps.answerRoom(model), maxStoredBytes);
        if (fits > 0) return Math.min(free, fits);
      }
      await nextChange(deps.store.reads.onChange);
    }
  };

  let pending: LineSubmit[] = [];
  /** Queues the pending lines, a write at a time; false once the batch takes no more lines. */
  const flush = async (): Promise<boolean> => {
    while (pending.length > 0) {
      const free = await room(pending.length, (pending[0] as LineSubmit).model);
      if (free === undefined) return false;
      const write: LineSubmit[] = [];
      let bytes = 0;
      for (const command of pending) {
        const size = payloadBytesOf(command);
        if (write.length >= free || (write.length > 0 && bytes + size > deps.lineBudget.perAccount.bytes)) break;
        write.push(command);
        bytes += size;
      }
      const giveBack = await deps.lineBudget.take(accountId, write.length, bytes);
      let outcomes: Awaited<ReturnType<typeof deps.send>>[];
      try {
        outcomes = await Promise.all(write.map((command) => deps.send(command)));
      } finally {
        giveBack();
      }
      // Cancelled or past its window meanwhile: the store refuses further lines.
      if (outcomes.some((outcome) => outcome instanceof Refused)) return false;
      // The account reached its bound of stored bytes meanwhile: those lines wait for room (the rest were queued,
      // or were queued already).
      const refused = write.filter((_, i) => outcomes[i] instanceof AccountLimitReached);
      pending = [...refused, ...pending.slice(write.length)];
      await keep();
    }
    return true;
  };

  let ordinal = 0;
  const pace = eventLoopPace();
  for await (const source of jsonLines(deps.store.files.read(inputFileId), deps.maxLineBytes)) {
    await pace();
    ordinal++;
    if (ordinal <= skip) {
      if (ordinal % chunkLines === 0) await keep();
      continue;
    }
    pending.push(submitOf(source));
    if (pending.length >= perWrite && !(await flush())) return;
  }
  await flush();
};

/** A line's JSON as far as it parses (a line that no longer validates may not be an object at all). */
const parsedOrEmpty = (text: string): { custom_id?: unknown; body?: { model?: unknown } } => {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null ? parsed : {};
  } catch {
    return {};
  }
};

/** Resolves at the store's next change (not sooner than `lookAgainMs.soonest`), or after `lookAgainMs.latest`. */
const nextChange = async (onChange: (listener: () => void) => () => void) => {
  let stopHearing = () => {};
  await Promise.race([
    new Promise<void>((resolve) => {
      stopHearing = onChange(() => resolve());
    }),
    sleep(lookAgainMs.latest),
  ]);
  stopHearing();
  await sleep(lookAgainMs.soonest);
};
