/**
 * The store counts requests being processed, in all processes, under these counters: per model (what a model's
 * `maxConcurrency` bounds), per account (what a plan's `maxProcessing` bounds) and per account and model (what
 * `processing.maxAccountShare` bounds). One table of counters serves the three. A model id has no control character
 * (config.ts refuses them), so a name that starts with the unit separator (U+001F) is never a model's; not NUL, which
 * PostgreSQL's text refuses. The PostgreSQL store's migration 2 writes the same names: change them together.
 */
const separator = '\u001f';

export const modelCounter = (model: string): string => model;
export const accountCounter = (accountId: string): string => `${separator}${accountId}`;
export const accountModelCounter = (accountId: string, model: string): string =>
  `${separator}${accountId}${separator}${model}`;

/** Batches' lines of a model being processed (what `batches.minShare` gives them at least). Account ids start with
 * `acct_`, so this name is never an account's. */
export const batchLinesCounter = (model: string): string => `${separator}batch${separator}${model}`;

/** Calls of a model on one of its upstreams (what the upstream's `maxConcurrency` bounds: contract 19). An upstream
 * removed from the config still counts down by its name. */
export const upstreamCounter = (model: string, upstream: string): string =>
  `${separator}up${separator}${model}${separator}${upstream}`;

type Counted = {
  readonly accountId: string;
  readonly model: string;
  readonly batchId?: string | undefined;
  readonly upstream?: string | undefined;
  readonly servedBy?: string | undefined;
};

/** The counters a request being processed counts in. */
export const countersOf = (context: Counted): readonly string[] =>
  context.upstream === undefined
    ? withoutUpstream(context)
    : [...withoutUpstream(context), upstreamCounter(context.servedBy ?? context.model, context.upstream)];

/**
 * What a request's move does to the counters: one less in each it counted in while processing before, one more in
 * each it counts in while processing after. A move within processing (a takeover or a failover to another upstream)
 * moves only what changed.
 */
export const counterMoves = (
  before: { readonly status: string; readonly context: Counted },
  after: { readonly status: string; readonly context: Counted },
): Map<string, number> => {
  const moves = new Map<string, number>();
  if (before.status === 'processing')
    for (const counter of countersOf(before.context)) moves.set(counter, (moves.get(counter) ?? 0) - 1);
  if (after.status === 'processing')
    for (const counter of countersOf(after.context)) moves.set(counter, (moves.get(counter) ?? 0) + 1);
  for (const [counter, delta] of moves) if (delta === 0) moves.delete(counter);
  return moves;
};

/** A request served by a fallback counts in the fallback's bound (its account's share stays its own model's). */
const withoutUpstream = (context: Counted): readonly string[] =>
  context.batchId === undefined
    ? [
        modelCounter(context.servedBy ?? context.model),
        accountCounter(context.accountId),
        accountModelCounter(context.accountId, context.model),
      ]
    : [
        modelCounter(context.servedBy ?? context.model),
        accountCounter(context.accountId),
        accountModelCounter(context.accountId, context.model),
        batchLinesCounter(context.model),
      ];
