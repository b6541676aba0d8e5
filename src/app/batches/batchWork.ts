import type { Logger } from 'pino';
import type { BatchCommand } from '../../domain/batch/decider.js';
import type { BatchView } from '../../domain/batch/state.js';
import type { Command } from '../../domain/commands.js';
import type { JsonBounds } from '../../domain/jsonBounds.js';
import type { PassThroughOf } from '../../modelPassThrough.js';
import type { CommandOutcome, StoreShape } from '../../ports/Store.js';
import type { CommitterShape } from '../Committer.js';
import { eventLoopPace } from '../eventLoopPace.js';
import type { SubmissionRules } from '../submission.js';
import type { TokenBudgetRefusal } from '../tokenBudget.js';
import type { BatchEndpointsShape } from './BatchEndpoints.js';
import { type JsonLine, jsonLines } from './jsonLines.js';
import type { LineBudgetShape } from './lineBudget.js';
import { type BatchLine, checkLine, type LineError, lineChecksOf } from './lineRules.js';

/** What the batch runner's steps need: the store, the committer, the clock, and the bounds a batch is held to. */
export type BatchRunnerDeps = {
  readonly store: StoreShape;
  readonly send: CommitterShape['send'];
  readonly now: () => number;
  readonly log: Logger;
  readonly owner: string;
  readonly endpoints: BatchEndpointsShape;
  readonly rules: SubmissionRules;
  readonly providerOf: (model: string) => string | undefined;
  /** The fields each model passes through. */
  readonly passThroughOf?: PassThroughOf | undefined;
  readonly newFileId: () => string;
  readonly leaseMs: number;
  readonly maxLines: number;
  readonly maxLineBytes: number;
  /** The bounds a request's body gets (`maxJsonDepth`, `maxJsonValues`): each line's body gets them too. */
  readonly jsonBounds: JsonBounds;
  readonly requestTtlMs: number;
  readonly maxAttempts: number;
  readonly outputExpiresAfterSeconds: number;
  /** This process's budget of batches' lines handed to the committer and not durable yet (lineBudget.ts). */
  readonly lineBudget: LineBudgetShape;
  /** A batch's lines queued and not ended, at most (`batches.maxLinesAhead`). */
  readonly maxLinesAhead: number;
  /** The account's bound of stored bytes (its plan's `maxFileStorageBytes`; undefined: no such account). */
  readonly maxStoredBytes: (accountId: string) => Promise<number | undefined>;
  /** The models the account may use (its `allowedModels`; absent: every model): a line naming another fails as a
   * line naming an unknown model does. */
  readonly allowedModelsOf?: ((accountId: string) => Promise<readonly string[] | undefined>) | undefined;
  /** The room a line of `model` holds in its account's stored bytes until it ends: twice the most its answer may
   * take (kept, and its line of the output file). */
  readonly answerRoom: (model: string) => number;
  /** Aborts a line's model call in this process, if it runs here (a cancelled batch's lines). */
  readonly cancelRunning?: ((reqId: string) => void) | undefined;
  /** Whether the account's token limits refuse more work now (app/tokenBudget.ts); absent: none are kept. */
  readonly tokenRefusal?: ((accountId: string) => Promise<TokenBudgetRefusal | undefined>) | undefined;
};

/** One step of a batch's housekeeping: what it works with, and `keep`, which renews the batch's lease as it goes. */
export type BatchStep = {
  readonly deps: BatchRunnerDeps;
  /** Sends a command of the batch's machine; the outcome when it was taken, undefined when refused. */
  readonly sendBatch: (batchId: string, command: BatchCommand) => Promise<CommandOutcome | undefined>;
  /** Renews the batch's lease once a third of it has passed; throws `LostLease` when it cannot. */
  readonly keep: () => Promise<void>;
};

/** The batch's lease is no longer this process's (or the process stops): its work stops where it is. */
export class LostLease extends Error {}

/** Lines queued or cancelled per write. */
export const chunkLines = 1_000;
/**
 * Lines whose requests (with their answers) are read at once while the output and error files are written: few
 * enough that their answers, which no bound keeps small, do not pile up in memory (one at a time before), many enough
 * that PostgreSQL answers a batch in a few thousand statements rather than one per line.
 */
export const readChunkLines = 64;

/** A line of a batch that passed validation, with only what names it: its line and custom_id. */
export type LineName = { readonly line: number; readonly customId: string };

/** An iterable's items in arrays of `size` (the last may be shorter). */
export async function* inChunks<T>(items: AsyncIterable<T>, size: number): AsyncGenerator<T[]> {
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

/**
 * The committer's send as a batch's steps use it: a failure is still seen where the step awaits the send, and is
 * marked handled at once, because a step hands the event loop back (eventLoopPace) between sending and awaiting (a
 * write of 1,000 lines is awaited once), and Node ends the process on a rejection that has no handler meanwhile.
 */
export const handledSends =
  (send: CommitterShape['send']): CommitterShape['send'] =>
  (command, options) => {
    const sent = send(command, options);
    sent.catch(() => undefined);
    return sent;
  };

/** Sends a batch command; its outcome when the machine took it, undefined otherwise. */
export const batchSender =
  (send: CommitterShape['send']) =>
  async (batchId: string, command: BatchCommand): Promise<CommandOutcome | undefined> => {
    const outcome = await send({ type: 'Batch', batchId, command } as Command);
    return 'events' in outcome ? outcome : undefined;
  };

/**
 * The batch's input lines, each checked as validation checked it (lineChecksOf), with where it lies in the file. A
 * check that throws (a bug, not the line's fault) fails its line with the reason, as a refusal would: the batch's
 * validation ends instead of failing the same way at every try. The event loop is handed back every few milliseconds.
 */
export async function* linesOf(
  deps: BatchRunnerDeps,
  view: BatchView,
): AsyncGenerator<(BatchLine & { readonly source: JsonLine }) | LineError> {
  const { endpoint, inputFileId, batchId, accountId } = view.state.context;
  const seen = new Set<string>();
  const checks = lineChecksOf(deps, endpoint, await deps.allowedModelsOf?.(accountId));
  const pace = eventLoopPace();
  let logged = false;
  for await (const source of jsonLines(deps.store.files.read(inputFileId), deps.maxLineBytes)) {
    await pace();
    let checked: BatchLine | LineError;
    try {
      checked = checkLine(source, checks, seen);
    } catch (error) {
      // Logged once per pass: the same bug would otherwise log a stack per line.
      if (!logged) deps.log.warn({ err: error, batchId, line: source.line }, 'a batch line could not be checked');
      logged = true;
      const message = `line ${source.line} could not be checked: ${String(error)}`.slice(0, 500);
      checked = { code: 'invalid_request', line: source.line, message, param: 'body' };
    }
    yield 'code' in checked ? checked : { ...checked, source };
  }
}

/** The lines of a batch that passed validation, with only what names them: their line and custom_id. */
export async function* namesOf(deps: BatchRunnerDeps, view: BatchView): AsyncGenerator<LineName> {
  const pace = eventLoopPace();
  for await (const source of jsonLines(deps.store.files.read(view.state.context.inputFileId), deps.maxLineBytes)) {
    await pace();
    if (!('text' in source)) continue;
    const { custom_id: customId } = JSON.parse(source.text) as { custom_id: string };
    yield { line: source.line, customId };
  }
}
