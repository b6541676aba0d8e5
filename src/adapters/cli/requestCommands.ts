import type { Command } from 'commander';
import type { Config } from '../../config.js';
import type { RequestState } from '../../domain/request/state.js';
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

type CancelOptions = StoreOptions & { json?: boolean };

const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

/** What `requests cancel` did: the request as it is now, and what it was before. */
type Cancelled = {
  readonly state: RequestState;
  /** `waiting` or `processing` when this command cancelled it; `cancelled` when it already was. */
  readonly previous: 'waiting' | 'processing' | 'cancelled';
};

const cancelledJson = ({ state, previous }: Cancelled) => ({
  req_id: state.context.reqId,
  status: 'cancelled',
  previous_status: previous,
  already_cancelled: previous === 'cancelled',
  model: state.context.model,
  account_id: state.context.accountId,
  cancelled_at: iso(state.context.cancelledAt) ?? null,
});

const cancelledLine = ({ state, previous }: Cancelled): string => {
  const { reqId, model, accountId, cancelledAt } = state.context;
  if (previous === 'cancelled')
    return `request ${reqId} was already cancelled (at ${iso(cancelledAt)}); nothing changed`;
  const was =
    previous === 'processing'
      ? 'it was being processed; a running server drops its result'
      : 'it was waiting; it will not be processed';
  return `request ${reqId} is cancelled (${was}; model ${model}, account ${accountId})`;
};

/**
 * Cancels one request through the store's committer, as the API's cancel does: decided inside the write, so a
 * request that completes, fails or expires meanwhile (in a server using the same data directory) is refused by the
 * request machine rather than overwritten. Any account's request: this is the operator's command.
 */
const cancelRequest = async (
  reqId: string,
  options: CancelOptions,
  output: Output,
): Promise<Cancelled & { config: Config }> => {
  const config = await configOrFail(options);
  await requireDatabase(config, output);
  const [{ isRefusal }, { Unavailable }, { couldBeId, idForMessage }, { publicStatus }, { isCancellable }] =
    await Promise.all([
      import('../../domain/commands.js'),
      import('../../domain/errors.js'),
      import('../../domain/identifiers.js'),
      import('../../domain/request/publicStatus.js'),
      import('../../domain/request/questions.js'),
    ]);
  return withCommitter(config, async ({ store, committer, clock }) => {
    const shown = idForMessage(reqId);
    /** The request as it is now (also as another process, a running server, left it a moment ago). */
    const current = async (): Promise<RequestState | undefined> => {
      if (!couldBeId('request', reqId)) return undefined;
      const state = await store.reads.request(reqId);
      return state === undefined || state.status === 'none' ? undefined : state;
    };
    /** Why a request that is not queued cannot be cancelled (a cancelled one is answered as it is). */
    const notCancellable = (state: RequestState): CliError | undefined => {
      const now = clock.now();
      const status = publicStatus(state, now);
      // The machine says what may be cancelled; a cancelled one is answered as it is.
      if (status === 'cancelled' || isCancellable(state, now)) return undefined;
      const why =
        status === 'expired'
          ? `expired at ${iso(state.context.expiredAt ?? state.context.expiresAt)}`
          : status === 'completed'
            ? `completed at ${iso(state.context.completedAt)}`
            : `failed at ${iso(state.context.failedAt)}`;
      return new CliError(
        `request ${shown} cannot be cancelled: it ${why}; only a queued or in-progress request can be cancelled`,
      );
    };

    const before = await current();
    if (before === undefined) throw new CliError(`no request ${shown}`);
    const refused = notCancellable(before);
    if (refused !== undefined) throw refused;
    if (before.status === 'cancelled') return { state: before, previous: 'cancelled', config };

    const outcome = await committer.send({ type: 'Cancel', reqId, now: clock.now() });
    if (outcome instanceof Unavailable) throw new CliError(`request ${shown} was not cancelled: ${outcome.message}`);
    const after = await current();
    if (!isRefusal(outcome) && after !== undefined) {
      return { state: after, previous: before.status === 'processing' ? 'processing' : 'waiting', config };
    }
    // Refused: it moved on between the look and the write (completed, failed, expired, or cancelled by another).
    if (after?.status === 'cancelled') return { state: after, previous: 'cancelled', config };
    const moved = after === undefined ? undefined : notCancellable(after);
    throw (
      moved ??
      new CliError(
        `request ${shown} was not cancelled: ${isRefusal(outcome) ? outcome.message : 'it cannot be read back'}`,
      )
    );
  });
};

/** `airs requests ...`: cancel (an operator's cancellation, the CLI's side of contract section 11). */
export const registerRequestCommands = (program: Command, output: Output) => {
  const requests = program.command('requests').description('act on requests');
  withStoreOptions(requests.command('cancel'))
    .description('cancel a queued or in-progress request of any account (works while the server runs)')
    .argument('<reqId>', 'the request id (req_…)')
    .option('--json', 'print JSON')
    .action(async (reqId: string, options: CancelOptions) => {
      if (reqId.trim() === '') throw new CliError('expected a request id, got ""', 2);
      const { config, ...cancelled } = await cancelRequest(reqId, options, output);
      // As the account commands do: in words, stderr names the data directory used; stdout stays what scripts read.
      if (options.json !== true) output.err(await dataDirNote(config));
      emit(output, options.json, cancelledJson(cancelled), () => [cancelledLine(cancelled)]);
    });
};
