import * as Context from 'effect/Context';
import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import * as Option from 'effect/Option';
import type { Logger } from 'pino';
import type { BatchCommand, WrittenFile } from '../../domain/batch/decider.js';
import { lineRequestId } from '../../domain/batch/lines.js';
import { type BatchView, linesDone, mayCloseWindow, mayTakeBatch } from '../../domain/batch/state.js';
import type { Command } from '../../domain/commands.js';
import { isRefusal } from '../../domain/commands.js';
import { InvalidRequest, Refused } from '../../domain/errors.js';
import { AppClock } from '../../ports/Clock.js';
import { Ids } from '../../ports/Ids.js';
import { Log } from '../../ports/Logger.js';
import { StorageFault, Store, type StoredRequest, type StoreShape } from '../../ports/Store.js';
import { AppConfig } from '../AppConfig.js';
import { Committer, type CommitterShape } from '../Committer.js';
import { Models } from '../Models.js';
import { Processor } from '../processing/Processor.js';
import type { RequestView } from '../Requests.js';
import { answerOf, storedInputOf } from '../storedInput.js';
import { beyondModel, checkModelAndSize, type SubmissionRules } from '../submission.js';
import { BatchEndpoints, type BatchEndpointsShape } from './BatchEndpoints.js';
import { jsonLines } from './jsonLines.js';
import { type BatchLine, checkLine, type LineError } from './lineRules.js';

/**
 * Each server process looks after the batches that have not ended (contract 16): it validates a batch's input file,
 * queues its lines as requests, cancels them when the batch is cancelled or its window passes, and writes its output
 * and error files once every line has ended. One process at a time does a batch's housekeeping, under the batch's
 * lease (the machine refuses every step from another); a process that dies leaves it to another once the lease
 * lapses. Every step is safe to do again: a line's request id is made from the batch and the line, so a line queued
 * before a crash is refused when queued again; the output files are made in the same write as the batch's end.
 * The lines themselves are run by the pool like any request (fairness: claimFairly.ts).
 */
export interface BatchRunnerShape {
  /** Looks at every open batch now and starts the work each needs (what the timer and the store's changes do). */
  tick(): Promise<void>;
  /** Resolves once no batch work is in flight in this process. */
  idle(): Promise<void>;
  /** Deletes expired files and removes bytes that no file names (an upload cut by a crash). */
  sweepFiles(): Promise<void>;
  /** Stops the work in flight at its next step (its lease lapses, and another process goes on with it). */
  stop(): void;
}

export class BatchRunner extends Context.Service<BatchRunner, BatchRunnerShape>()('airs/BatchRunner') {}

export type BatchRunnerDeps = {
  readonly store: StoreShape;
  readonly send: CommitterShape['send'];
  readonly now: () => number;
  readonly log: Logger;
  readonly owner: string;
  readonly endpoints: BatchEndpointsShape;
  readonly rules: SubmissionRules;
  readonly providerOf: (model: string) => string | undefined;
  readonly newFileId: () => string;
  readonly leaseMs: number;
  readonly maxLines: number;
  readonly maxLineBytes: number;
  readonly requestTtlMs: number;
  readonly maxAttempts: number;
  readonly outputExpiresAfterSeconds: number;
  /** Aborts a line's model call in this process, if it runs here (a cancelled batch's lines). */
  readonly cancelRunning?: ((reqId: string) => void) | undefined;
};

/** Lines queued or cancelled per write. */
const chunkLines = 1_000;
/**
 * Lines whose requests (with their answers) are read at once while the output and error files are written: few
 * enough that their answers, which no bound keeps small, do not pile up in memory (one at a time before), many enough
 * that PostgreSQL answers a batch in a few thousand statements rather than one per line.
 */
const readChunkLines = 64;

/** The most validation errors a failed batch lists (contract 16). */
const maxListedErrors = 1_000;
/** Bytes no file names are removed once this old (an upload still being written is younger). */
const orphanAgeMs = 60 * 60 * 1000;

class LostLease extends Error {}

type LineName = { readonly line: number; readonly customId: string };

/** An iterable's items in arrays of `size` (the last may be shorter). */
async function* inChunks<T>(items: AsyncIterable<T>, size: number): AsyncGenerator<T[]> {
  let chunk: T[] = [];
  for await (const item of items) {
    chunk.push(item);
    if (chunk.length >= size) {
      yield chunk;
      chunk = [];
    }
  }
  if (chunk.length > 0) yield chunk;
}

export const createBatchRunner = (deps: BatchRunnerDeps): BatchRunnerShape => {
  const { store, owner, log } = deps;
  const working = new Map<string, Promise<void>>();
  let stopping = false;

  const sendBatch = async (batchId: string, command: BatchCommand) => {
    const outcome = await deps.send({ type: 'Batch', batchId, command } as Command);
    return 'events' in outcome ? outcome : undefined;
  };

  /** Keeps the batch's lease while its work goes on: renewed once a third of it has passed. */
  const leaseKeeper = (batchId: string) => {
    let renewedAt = deps.now();
    return async () => {
      if (stopping) throw new LostLease();
      if (deps.now() - renewedAt < deps.leaseMs / 3) return;
      renewedAt = deps.now();
      const taken = await sendBatch(batchId, { type: 'TakeBatch', owner, leaseMs: deps.leaseMs, now: renewedAt });
      if (taken === undefined) throw new LostLease();
    };
  };

  /** The batch's input lines, each checked as validation checked it (to queue them, the same input). */
  async function* linesOf(view: BatchView): AsyncGenerator<BatchLine | LineError> {
    const { endpoint, inputFileId } = view.state.context;
    const seen = new Set<string>();
    // The size of a conversation is named as each route names it.
    const textParam = endpoint === '/v1/responses' ? 'input' : 'messages';
    const checkBody = (body: unknown) => {
      const input = deps.endpoints.check(endpoint, body);
      if (!('model' in input)) return input;
      const refused = checkModelAndSize(input, storedInputOf(input).text, deps.rules);
      if (refused !== undefined) {
        // The submit's checks name no field (`/v1/ai` has two): the line's error does.
        const param = refused.details?.known_models !== undefined ? 'model' : textParam;
        return new InvalidRequest({ message: refused.message, details: { ...refused.details, param } });
      }
      return beyondModel(input, deps.providerOf(input.model)) ?? input;
    };
    for await (const source of jsonLines(store.files.read(inputFileId), deps.maxLineBytes))
      yield checkLine(source, endpoint, seen, checkBody);
  }

  const validate = async (view: BatchView, keep: () => Promise<void>) => {
    const { batchId } = view.state.context;
    const errors: LineError[] = [];
    const models = new Set<string>();
    let total = 0;
    for await (const line of linesOf(view)) {
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
    if (total === 0)
      errors.push({ code: 'empty_file', line: null, message: 'the input file has no lines', param: null });
    const now = deps.now();
    if (errors.length > 0) {
      await sendBatch(batchId, { type: 'FailValidation', owner, errors: JSON.stringify(errors), now });
      return;
    }
    const model = models.size === 1 ? [...models][0] : undefined;
    await sendBatch(batchId, { type: 'StartBatch', owner, total, model, now });
  };

  /** Queues the lines not queued yet: those a crash left out are queued again; those queued are refused as such. */
  const queueLines = async (view: BatchView, keep: () => Promise<void>) => {
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
    for await (const line of linesOf(view)) {
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

  /** Cancels the lines that wait (and, for a cancel, those running): a batch cancelled or past its window. */
  const cancelLines = async (view: BatchView, keep: () => Promise<void>) => {
    const { batchId } = view.state.context;
    const running = view.state.status === 'cancelling';
    for await (const names of inChunks(namesOf(view), readChunkLines)) {
      // Lines that need nothing are read too: the lease must outlast the pass, however few it cancels.
      await keep();
      const reqIds = names.map((line) => lineRequestId(batchId, line.line));
      const stored = await store.reads.requestsWithText(reqIds);
      const cancels = reqIds.flatMap((reqId, i) => {
        const status = stored[i]?.state.status;
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

  /** The lines of a batch that passed validation, with only what names them: their line and custom_id. */
  async function* namesOf(view: BatchView): AsyncGenerator<LineName> {
    for await (const source of jsonLines(store.files.read(view.state.context.inputFileId), deps.maxLineBytes)) {
      if (!('text' in source)) continue;
      const { custom_id: customId } = JSON.parse(source.text) as { custom_id: string };
      yield { line: source.line, customId };
    }
  }

  const outputLineId = (reqId: string) => `batch_req_${reqId.slice('req_'.length)}`;

  /** Writes one of the batch's two files: every line that belongs in it, as it is read. */
  const writeFile = async (
    view: BatchView,
    kind: 'output' | 'error',
    keep: () => Promise<void>,
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
      for await (const names of inChunks(namesOf(view), readChunkLines)) {
        // Counted in lines read, not lines written: a pass that writes few of them (the output file of a batch that
        // expired or was cancelled early, the error file of one where a few lines failed) reads them all, and its
        // lease must outlast it.
        await keep();
        const stored = await store.reads.requestsWithText(names.map((line) => lineRequestId(batchId, line.line)));
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
    const stored = await store.files.write(fileId, text(), Number.MAX_SAFE_INTEGER, deps.now());
    if (lines === 0) {
      await store.files.remove(fileId);
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

  const finalize = async (view: BatchView, keep: () => Promise<void>) => {
    const { batchId } = view.state.context;
    const output = await writeFile(view, 'output', keep);
    // Every line completed (all queued, none failed): the error file would be empty, and is not read for.
    const total = view.state.context.total ?? 0;
    const clean = output.lines === total && view.counts.queued === total;
    const errors = clean ? { file: undefined, lines: 0 } : await writeFile(view, 'error', keep);
    const ended = await sendBatch(batchId, {
      type: 'EndBatch',
      owner,
      outputFile: output.file,
      errorFile: errors.file,
      completed: output.lines,
      failed: errors.lines,
      now: deps.now(),
    });
    // Another process ended it (this one lost its lease): what this one wrote names nothing.
    if (ended === undefined)
      for (const file of [output.file, errors.file]) if (file !== undefined) await store.files.remove(file.fileId);
  };

  /** Does whatever the batch needs next, step after step, while this process holds its lease. */
  const work = async (batchId: string) => {
    let view = await store.reads.batch(batchId);
    if (view === undefined) return;
    const taken = await sendBatch(batchId, { type: 'TakeBatch', owner, leaseMs: deps.leaseMs, now: deps.now() });
    if (taken === undefined) return;
    const keep = leaseKeeper(batchId);
    for (let step = 0; step < 8; step++) {
      view = await store.reads.batch(batchId);
      if (view === undefined) return;
      const { status, context } = view.state;
      const total = context.total ?? 0;
      if (status === 'validating') await validate(view, keep);
      else if (status === 'in_progress' && view.counts.queued < total) await queueLines(view, keep);
      else if (status === 'in_progress' && linesDone(view.counts) === total)
        await sendBatch(batchId, { type: 'FinalizeBatch', owner, now: deps.now() });
      else if (status === 'expiring' || status === 'cancelling') {
        await cancelLines(view, keep);
        const after = await store.reads.batch(batchId);
        if (after === undefined || linesDone(after.counts) !== after.counts.queued) return;
        await sendBatch(batchId, { type: 'FinalizeBatch', owner, now: deps.now() });
      } else if (status === 'finalizing') {
        await finalize(view, keep);
        return;
      } else return;
    }
  };

  /**
   * Whether the batch needs this process now: this process may take its lease (the machine says so), and there is work:
   * any in validating, cancelling, expiring or finalizing; in progress, lines left to queue or all of them ended.
   */
  const needsWork = (view: BatchView, now: number): boolean => {
    if (!mayTakeBatch(view.state, owner, now)) return false;
    if (view.state.status !== 'in_progress') return true;
    const total = view.state.context.total ?? 0;
    return view.counts.queued < total || linesDone(view.counts) === total;
  };

  const tick = async () => {
    for (const { batchId } of await store.reads.openBatches(1_000)) {
      if (working.has(batchId)) continue;
      const view = await store.reads.batch(batchId);
      if (view === undefined) continue;
      const now = deps.now();
      // Past its window: closed by whichever process sees it first (the machine takes it once).
      if (mayCloseWindow(view.state, now)) {
        await deps.send({ type: 'Batch', batchId, command: { type: 'CloseWindow', now } });
        continue;
      }
      if (!needsWork(view, now)) continue;
      const job = work(batchId)
        .catch((error: unknown) => {
          if (error instanceof LostLease) return;
          if (error instanceof StorageFault) log.debug({ batchId, reason: error.message }, 'batch work paused');
          else log.error({ err: error, batchId }, 'batch work failed; it is taken up again');
        })
        .finally(() => working.delete(batchId));
      working.set(batchId, job);
    }
  };

  const sweepFiles = async () => {
    const now = deps.now();
    const inputs = new Set<string>();
    for (const { batchId } of await store.reads.openBatches(1_000_000)) {
      const view = await store.reads.batch(batchId);
      if (view !== undefined) inputs.add(view.state.context.inputFileId);
    }
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
      if (!inputs.has(blobId)) await store.files.remove(blobId);
    }
  };

  return {
    tick,
    sweepFiles,
    stop: () => {
      stopping = true;
    },
    idle: async () => {
      while (working.size > 0) await Promise.all(working.values());
    },
  };
};

/** How often each process looks at the open batches even when nothing is heard (a lease that lapsed, a window). */
const tickMs = 1_000;
/** How often expired files and bytes that no file names are swept. */
const fileSweepMs = 60_000;
/** The store's changes wake the runner at most this often (a 100,000-line batch changes it all the time). */
const wakeMs = 100;

export const BatchRunnerLayer = Layer.effect(
  BatchRunner,
  Effect.gen(function* () {
    const config = yield* AppConfig;
    const store = yield* Store;
    const committer = yield* Committer;
    const clock = yield* AppClock;
    const log = yield* Log;
    const ids = yield* Ids;
    const models = yield* Models;
    const endpoints = yield* BatchEndpoints;
    const processor = Option.getOrUndefined(yield* Effect.serviceOption(Processor));
    const runner = createBatchRunner({
      store,
      send: (command) => committer.send(command),
      now: () => clock.now(),
      log,
      owner: store.owners?.name('batches') ?? `batches-${process.pid}-${ids.requestId().slice(-8)}`,
      endpoints,
      rules: {
        modelIds: models.ids(),
        maxPromptChars: config.maxPromptChars,
        maxPromptBytes: config.maxPromptBytes,
      },
      providerOf: (model) => models.get(model)?.config.provider,
      newFileId: () => `file-${ids.requestId().slice('req_'.length)}`,
      leaseMs: config.processing.leaseSeconds * 1000,
      maxLines: config.batches.maxLines,
      maxLineBytes: config.maxBodyBytes,
      requestTtlMs: config.requestTtlSeconds * 1000,
      maxAttempts: config.processing.maxAttempts,
      outputExpiresAfterSeconds: config.batches.outputExpiresAfterSeconds,
      cancelRunning: processor === undefined ? undefined : (reqId) => processor.cancelled(reqId),
    });
    let ticking: Promise<void> | undefined;
    let again = false;
    let stopped = false;
    const tick = () => {
      if (stopped) return;
      if (ticking !== undefined) {
        again = true;
        return;
      }
      ticking = runner
        .tick()
        .catch((error: unknown) => {
          if (!(error instanceof StorageFault)) log.error({ err: error }, 'batch runner tick failed');
        })
        .finally(() => {
          ticking = undefined;
          if (again) {
            again = false;
            setTimeout(tick, wakeMs).unref();
          }
        });
    };
    let sweeping: Promise<void> = Promise.resolve();
    const sweep = () => {
      sweeping = runner.sweepFiles().catch((error: unknown) => {
        if (!(error instanceof StorageFault)) log.error({ err: error }, 'file sweep failed');
      });
    };
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        const timers = [setInterval(tick, tickMs).unref(), setInterval(sweep, fileSweepMs).unref()];
        const stopHearing = store.reads.onChange(tick);
        tick();
        return { timers, stopHearing };
      }),
      ({ timers, stopHearing }) =>
        Effect.promise(async () => {
          stopped = true;
          runner.stop();
          stopHearing();
          for (const timer of timers) clearInterval(timer);
          await ticking;
          await sweeping;
          await runner.idle();
        }),
    );
    return BatchRunner.of(runner);
  }),
);
