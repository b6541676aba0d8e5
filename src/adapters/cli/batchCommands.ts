import type { Command } from 'commander';
import type { Config } from '../../config.js';
import type { BatchStatus, BatchView } from '../../domain/batch/state.js';
import type { ReadModel, StoreShape } from '../../ports/Store.js';
import {
  configOrFail,
  dataDirNote,
  requireDatabase,
  type StoreOptions,
  withCommitter,
  withStoreOptions,
} from './context.js';
import { CliError, emit, type Output } from './output.js';

// Every module here that is not a type is loaded on use (see context.ts): `airs --help` starts without effect or lmdb.

type BatchOptions = StoreOptions & { json?: boolean };
type ListOptions = BatchOptions & { account?: string };

/** The batch object of the API (wire.ts), loaded on use. */
type BatchObject = ReturnType<typeof import('../http/openai/batches/wire.js').batchObjectOf>;

/** A time of the batch object (Unix seconds) in ISO 8601, to the second as the API keeps it. */
const iso = (seconds: number | null) =>
  seconds === null ? undefined : `${new Date(seconds * 1000).toISOString().slice(0, 19)}Z`;

/** Lines of a batch read from an account's list per read. */
const listChunk = 500;

/** The configuration and an open store for a command that reads (and maybe writes) batches. */
const withStore = async <A>(
  options: BatchOptions,
  output: Output,
  use: (store: StoreShape, config: Config) => Promise<A>,
): Promise<A> => {
  const config = await configOrFail(options);
  // Reading never creates: a data directory without a database is a mistyped setting.
  await requireDatabase(config, output);
  const { openConfiguredStore } = await import('../../storeLocation.js');
  const store = await openConfiguredStore(config);
  try {
    const result = await use(store, config);
    // As the account commands do: in words, stderr names the store used; stdout stays what scripts read.
    if (options.json !== true) output.err(await dataDirNote(config));
    return result;
  } finally {
    await store.close();
  }
};

/** Every batch of an account, newest first, read a page at a time. */
const batchesOf = async (reads: ReadModel, accountId: string): Promise<BatchView[]> => {
  const views: BatchView[] = [];
  let from: { createdAt: number; id: string } | undefined;
  for (;;) {
    const ids = await reads.listOf('accountBatches', accountId, { from, order: 'desc', limit: listChunk });
    const before = from;
    for (const id of ids) {
      const view = await reads.batch(id);
      if (view === undefined) continue;
      views.push(view);
      from = { createdAt: view.state.context.createdAt, id };
    }
    // A chunk that moved the cursor on nowhere (its views gone meanwhile) would be read again for ever: stop there.
    if (ids.length < listChunk || from === before) return views;
  }
};

/** What a batch's progress is: lines ended of its lines, and the share in whole percent. */
const progressOf = (batch: BatchObject) => {
  const { total, completed, failed } = batch.request_counts;
  const done = completed + failed;
  return { done, total, percent: total === 0 ? 0 : Math.floor((done * 100) / total) };
};

/** A batch as `list` and `show` print it with --json: the API's object, its account, and (show) its lines. */
const listedJson = (view: BatchView, batch: BatchObject) => ({ ...batch, account_id: view.state.context.accountId });

/** The store's counts of a batch's lines, beside the API's `request_counts`: what is queued and not ended yet. */
const linesJson = (view: BatchView, batch: BatchObject) => {
  const { queued, completed, failed, inputTokens, outputTokens } = view.counts;
  return {
    total: batch.request_counts.total,
    queued,
    pending: Math.max(0, queued - completed - failed),
    completed,
    failed,
    input_tokens: inputTokens,
    output_tokens: outputTokens,
  };
};

const listLine = (view: BatchView, batch: BatchObject) => {
  const { done, total, percent } = progressOf(batch);
  const { completed, failed } = batch.request_counts;
  return [
    batch.id,
    batch.status.padEnd(11),
    batch.endpoint,
    batch.model ?? '-',
    `${done}/${total} done (${percent}%: ${completed} completed, ${failed} failed)`,
    `created ${iso(batch.created_at)}`,
    `account ${view.state.context.accountId}`,
  ].join('  ');
};

/** Why a batch that is not `in_progress` in the API's words is where it is (the machine's own status). */
const statusNote = (status: BatchStatus): string => {
  if (status === 'expiring')
    return ' (its completion window has passed: its running lines finish, then it ends expired)';
  if (status === 'failing') return ' (its housekeeping failed: its running lines finish, then it ends failed)';
  return '';
};

const showLines = (view: BatchView, batch: BatchObject): string[] => {
  const lines = linesJson(view, batch);
  const { done, total, percent } = progressOf(batch);
  const times = (
    [
      ['created', batch.created_at],
      ['in progress', batch.in_progress_at],
      ['cancelling', batch.cancelling_at],
      ['finalizing', batch.finalizing_at],
      ['completed', batch.completed_at],
      ['failed', batch.failed_at],
      ['expired', batch.expired_at],
      ['cancelled', batch.cancelled_at],
      ['expires', batch.expires_at],
    ] as const
  ).flatMap(([label, at]) => (at === null ? [] : [`  ${label.padEnd(13)} ${iso(at)}`]));
  const errors = batch.errors?.data ?? [];
  return [
    `batch ${batch.id} (account ${view.state.context.accountId})`,
    `  status        ${batch.status}${statusNote(view.state.status)}`,
    `  endpoint      ${batch.endpoint}`,
    `  model         ${batch.model ?? '-'}`,
    `  input file    ${batch.input_file_id}`,
    `  output file   ${batch.output_file_id ?? '-'}`,
    `  error file    ${batch.error_file_id ?? '-'}`,
    ...times,
    `  progress      ${done} of ${total} lines done (${percent}%): ${batch.request_counts.completed} completed, ${batch.request_counts.failed} failed`,
    `  lines         ${lines.queued} queued as requests, ${lines.pending} of them not ended, ${lines.completed} completed, ${lines.failed} failed`,
    `  usage         ${batch.usage.input_tokens} input tokens, ${batch.usage.output_tokens} output tokens`,
    ...(batch.metadata === null ? [] : [`  metadata      ${JSON.stringify(batch.metadata)}`]),
    ...(errors.length === 0 ? [] : [`  errors        ${errors.length}`]),
    ...errors.map(
      (error: { line?: number | null; code: string; message: string }) =>
        `    line ${error.line ?? '-'}: ${error.code}: ${error.message}`,
    ),
  ];
};

/** A batch by its id, of any account (the operator's commands), or a failure naming it. */
const batchOrFail = async (reads: ReadModel, batchId: string): Promise<BatchView> => {
  const { couldBeId, idForMessage } = await import('../../domain/identifiers.js');
  const view = couldBeId('batch', batchId) ? await reads.batch(batchId) : undefined;
  if (view === undefined || view.state.status === 'none') throw new CliError(`no batch ${idForMessage(batchId)}`);
  return view;
};

/** What `batches cancel` did: the batch as it is now, and its API status before. */
type Cancelled = { readonly view: BatchView; readonly batch: BatchObject; readonly previous: string };

const cancelledLine = ({ view, batch, previous }: Cancelled): string => {
  const { done, total } = progressOf(batch);
  const who = `account ${view.state.context.accountId}`;
  if (previous === 'cancelled')
    return `batch ${batch.id} was already cancelled (at ${iso(batch.cancelled_at)}); nothing changed`;
  if (previous === 'cancelling')
    return `batch ${batch.id} was already being cancelled (since ${iso(batch.cancelling_at)}); nothing changed`;
  if (previous === 'finalizing')
    return `batch ${batch.id} is cancelled (it was finalizing, ${done} of ${total} lines done; its output and error files are not kept; ${who})`;
  const lines =
    previous === 'validating'
      ? 'it was validating; none of its lines will run'
      : `it was in progress, ${done} of ${total} lines done; its queued lines will not run and its running ones finish or are stopped`;
  return `batch ${batch.id} is ${batch.status} (${lines}; ${who}); a running server writes its files and ends it cancelled`;
};

/** Why a batch cannot be cancelled (one that ended, or is ending otherwise, is answered as it is). */
const notCancellable = (view: BatchView, batch: BatchObject): CliError | undefined => {
  const why: Partial<Record<BatchStatus, string>> = {
    completed: `completed at ${iso(batch.completed_at)}`,
    failed: (batch.errors?.data ?? []).some((error: { code: string }) => error.code === 'batch_failed')
      ? `failed at ${iso(batch.failed_at)}: its housekeeping failed (its errors say why)`
      : `failed validation at ${iso(batch.failed_at)}`,
    expired: `expired at ${iso(batch.expired_at)}`,
    expiring: 'is past its completion window and ending as expired',
    failing: 'is ending as failed: its housekeeping failed (its errors say why)',
  };
  const reason = why[view.state.status];
  if (reason === undefined) return undefined;
  return new CliError(
    `batch ${batch.id} cannot be cancelled: it ${reason}; only a validating, in-progress or finalizing batch can be cancelled`,
  );
};

/**
 * Cancels a batch through the store's committer, as the API's cancel does, for the batch's own account: decided inside
 * the write by the batch machine, so a batch that ends meanwhile (in a server using the same store) is refused rather
 * than overwritten. The server's batch runner does the rest (cancels the queued lines, writes the files).
 */
const cancelBatch = async (
  batchId: string,
  options: BatchOptions,
  output: Output,
): Promise<Cancelled & { config: Config }> => {
  const config = await configOrFail(options);
  await requireDatabase(config, output);
  const [{ isRefusal }, { Unavailable }, { batchObjectOf }] = await Promise.all([
    import('../../domain/commands.js'),
    import('../../domain/errors.js'),
    import('../http/openai/batches/wire.js'),
  ]);
  return withCommitter(config, async ({ store, committer, clock }) => {
    const before = await batchOrFail(store.reads, batchId);
    const shownBefore = batchObjectOf(before);
    const refused = notCancellable(before, shownBefore);
    if (refused !== undefined) throw refused;
    if (before.state.status === 'cancelled' || before.state.status === 'cancelling')
      return { view: before, batch: shownBefore, previous: before.state.status, config };

    // A finalizing batch (its files being written, or failing to be) ends cancelled at once, without its files: the
    // operator's way out of a finalize that cannot finish. The API answers such a batch as it is (contract 16).
    const now = clock.now();
    const outcome = await committer.send({
      type: 'Batch',
      batchId,
      command:
        before.state.status === 'finalizing'
          ? { type: 'CancelFinalizing', now }
          : { type: 'CancelBatch', accountId: before.state.context.accountId, now },
    });
    if (outcome instanceof Unavailable) throw new CliError(`batch ${batchId} was not cancelled: ${outcome.message}`);
    const after = await batchOrFail(store.reads, batchId);
    const shownAfter = batchObjectOf(after);
    if (!isRefusal(outcome)) return { view: after, batch: shownAfter, previous: shownBefore.status, config };
    // Refused: it moved on between the look and the write (ended, or cancelled by another).
    if (after.state.status === 'cancelled' || after.state.status === 'cancelling')
      return { view: after, batch: shownAfter, previous: after.state.status, config };
    throw notCancellable(after, shownAfter) ?? new CliError(`batch ${batchId} was not cancelled: ${outcome.message}`);
  });
};

/** `airs batches ...`: list, show, cancel (the CLI's side of contract section 16, for the operator). */
export const registerBatchCommands = (program: Command, output: Output) => {
  const batches = program.command('batches').description('look at and cancel batches (OpenAI Batch API)');
  const command = (name: string) => withStoreOptions(batches.command(name)).option('--json', 'print JSON');

  command('list')
    .description('list batches, newest first: of one account, or of every account (works while the server runs)')
    .option('--account <id>', 'only this account’s batches')
    .action(async (options: ListOptions) => {
      if (options.account?.trim() === '') throw new CliError('--account: expected an account id, got ""', 2);
      const { batchObjectOf } = await import('../http/openai/batches/wire.js');
      const views = await withStore(options, output, async (store) => {
        if (options.account !== undefined) {
          if ((await store.reads.account(options.account)) === undefined)
            throw new CliError(`no account ${options.account}`);
          return batchesOf(store.reads, options.account);
        }
        const all: BatchView[] = [];
        for (const account of await store.reads.accounts())
          all.push(...(await batchesOf(store.reads, account.accountId)));
        // Newest first across accounts; ties (the same millisecond) by id, so the order is stable.
        return all.sort(
          (a, b) =>
            b.state.context.createdAt - a.state.context.createdAt ||
            (a.state.context.batchId < b.state.context.batchId ? 1 : -1),
        );
      });
      const rows = views.map((view) => ({ view, batch: batchObjectOf(view) }));
      emit(
        output,
        options.json,
        rows.map(({ view, batch }) => listedJson(view, batch)),
        () => (rows.length === 0 ? ['no batches'] : rows.map(({ view, batch }) => listLine(view, batch))),
      );
    });

  command('show')
    .description('show a batch as the API shows it, with its lines’ counts (any account’s)')
    .argument('<batchId>', 'the batch id (batch_…)')
    .action(async (batchId: string, options: BatchOptions) => {
      if (batchId.trim() === '') throw new CliError('expected a batch id, got ""', 2);
      const { batchObjectOf } = await import('../http/openai/batches/wire.js');
      const view = await withStore(options, output, (store) => batchOrFail(store.reads, batchId));
      const batch = batchObjectOf(view);
      emit(output, options.json, { ...listedJson(view, batch), lines: linesJson(view, batch) }, () =>
        showLines(view, batch),
      );
    });

  command('cancel')
    .description(
      'cancel a validating, in-progress or finalizing batch of any account (a finalizing one ends without its files; works while the server runs)',
    )
    .argument('<batchId>', 'the batch id (batch_…)')
    .action(async (batchId: string, options: BatchOptions) => {
      if (batchId.trim() === '') throw new CliError('expected a batch id, got ""', 2);
      const { config, ...cancelled } = await cancelBatch(batchId, options, output);
      if (options.json !== true) output.err(await dataDirNote(config));
      emit(
        output,
        options.json,
        {
          ...listedJson(cancelled.view, cancelled.batch),
          previous_status: cancelled.previous,
          already_cancelled: cancelled.previous === 'cancelled' || cancelled.previous === 'cancelling',
        },
        () => [cancelledLine(cancelled)],
      );
    });
};
