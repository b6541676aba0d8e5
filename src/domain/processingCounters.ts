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

/** The counters a request being processed counts in. */
export const countersOf = (context: {
  readonly accountId: string;
  readonly model: string;
  readonly batchId?: string | undefined;
}): readonly string[] =>
  context.batchId === undefined
    ? [
        modelCounter(context.model),
        accountCounter(context.accountId),
        accountModelCounter(context.accountId, context.model),
      ]
    : [
        modelCounter(context.model),
        accountCounter(context.accountId),
        accountModelCounter(context.accountId, context.model),
        batchLinesCounter(context.model),
      ];
