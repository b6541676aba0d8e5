import { expect } from 'vitest';
import type { BatchCommand } from '../../src/domain/batch/decider.js';
import { lineRequestId } from '../../src/domain/batch/lines.js';
import type { Command } from '../../src/domain/commands.js';
import type { StoredEvent } from '../../src/domain/events.js';
import type { FileCommand } from '../../src/domain/file/decider.js';
import { defaultPlans } from '../../src/domain/plans.js';
import type { RetryPolicy } from '../../src/domain/request/retryPolicy.js';
import type { CommandOutcome, StoreShape } from '../../src/ports/Store.js';
import type { ClaimAsk, Held, WorkQueueShape } from '../../src/ports/WorkQueue.js';
import { workQueueOver } from '../../src/storage/workQueue.js';

/** Commands and helpers the contract suite's features share. Times are plain numbers: the store has no clock. */

export const accountId = (n: number) => `acct_${n}`;

export const createAccount = (n: number, email = `user${n}@example.com`, now = 1): Command => ({
  type: 'Account',
  accountId: accountId(n),
  command: { type: 'CreateAccount', accountId: accountId(n), email, plan: 'free', now },
});

export const createKey = (n: number, keyId: string, now = 2): Command => ({
  type: 'Account',
  accountId: accountId(n),
  command: {
    type: 'CreateKey',
    keyId,
    keyHash: `hash_${keyId}`,
    prefix: keyId.slice(0, 8),
    name: `key ${keyId}`,
    plans: defaultPlans,
    now,
  },
});

export type SubmitOptions = {
  readonly account?: number;
  readonly now?: number;
  readonly ttlMs?: number;
  readonly model?: string;
  readonly prompt?: string;
  /** An idempotency key and the body it came with (`body`: the request hash). */
  readonly key?: { readonly key: string; readonly body: string };
  readonly maxAttempts?: number;
  readonly maxQueued?: number;
};

/** A submit of `prompt` (default "hello <reqId>") by acct_<account> (default 1) living `ttlMs` (default 60 s). */
export const submit = (reqId: string, options: SubmitOptions = {}): Command => {
  const prompt = options.prompt ?? `hello ${reqId}`;
  return {
    type: 'Submit',
    reqId,
    accountId: accountId(options.account ?? 1),
    keyId: 'key_1',
    model: options.model ?? 'echo',
    promptChars: prompt.length,
    prompt,
    ttlMs: options.ttlMs ?? 60_000,
    now: options.now ?? 1_000,
    ...(options.key === undefined
      ? {}
      : { idempotency: { key: options.key.key, requestHash: `sha256:${options.key.body}` } }),
    ...(options.maxAttempts === undefined ? {} : { maxAttempts: options.maxAttempts }),
    ...(options.maxQueued === undefined ? {} : { maxQueued: options.maxQueued }),
  };
};

/** A batch id of the form the API makes (`batch_` and 28 characters or more): its lines' ids are made from it. */
export const batchIdOf = (n: number) => `batch_${String(n).padStart(28, 'b')}`;
export const fileIdOf = (n: number) => `file-${String(n).padStart(24, '0')}`;

export const fileCommand = (fileId: string, command: FileCommand): Command => ({ type: 'File', fileId, command });
export const batchCommand = (batchId: string, command: BatchCommand): Command => ({
  type: 'Batch',
  batchId,
  command,
});

/** A file of acct_<account> (default 1), of purpose `batch` (a batch's input) unless told. */
export const createFile = (fileId: string, { account = 1, now = 100, purpose = 'batch' } = {}): Command =>
  fileCommand(fileId, {
    type: 'CreateFile',
    accountId: accountId(account),
    purpose,
    filename: `${fileId}.jsonl`,
    bytes: 1_234,
    sha256: `sha256-of-${fileId}`,
    now,
  });

export const createBatch = (batchId: string, inputFileId: string, { account = 1, now = 200 } = {}): Command =>
  batchCommand(batchId, {
    type: 'CreateBatch',
    accountId: accountId(account),
    keyId: 'key_1',
    endpoint: '/v1/chat/completions',
    inputFileId,
    completionWindow: '24h',
    windowMs: 86_400_000,
    now,
  });

/** The process doing batches' housekeeping in these tests (it takes their lease for an hour). */
export const batchRunner = 'runner_a';
export const takeBatch = (batchId: string, now = 300) =>
  batchCommand(batchId, { type: 'TakeBatch', owner: batchRunner, leaseMs: 3_600_000, now });
export const startBatch = (batchId: string, total: number, now = 400) =>
  batchCommand(batchId, { type: 'StartBatch', owner: batchRunner, total, model: 'echo', now });

/** Line `line` of a batch of acct_<account> (default 1): a submit with the batch's id and the line's `custom_id`. */
export const lineSubmit = (
  batchId: string,
  line: number,
  { now = 1_000 + line, ttlMs = 60_000, account = 1 } = {},
): Command => ({
  ...(submit(lineRequestId(batchId, line), { now, ttlMs, account }) as Extract<Command, { type: 'Submit' }>),
  batchId,
  customId: `line-${line}`,
});

/** A command no decider knows: deciding it throws. */
export const unknownCommand = (reqId: string): Command =>
  ({ type: 'NoSuchCommand', reqId, now: 1 }) as unknown as Command;

export const policy: RetryPolicy = { maxAttempts: 3, baseDelayMs: 1_000, maxDelayMs: 30_000 };

/** The work queue over a store's event log (of this process or another), one command per write. */
export const queueOf = (store: Pick<StoreShape, 'commit'>): WorkQueueShape =>
  workQueueOver(async (command) => {
    const [outcome] = await store.commit({ commands: [command] });
    if (outcome === undefined) throw new Error('the store answered a batch of one command with no outcome');
    return outcome;
  });

/** A claim's ask: owner and time, a lease of 10 s, up to 10 requests, no model bound, the usual retry policy. */
export const ask = (owner: string, now: number, more: Partial<ClaimAsk> = {}): ClaimAsk => ({
  owner,
  now,
  leaseMs: 10_000,
  max: 10,
  modelLimits: {},
  policy,
  ...more,
});

/** Claims and expects exactly one request to be started; returns what the owner holds. */
export const claimOne = async (queue: WorkQueueShape, owner: string, now: number, more: Partial<ClaimAsk> = {}) => {
  const claimed = await queue.claim(ask(owner, now, more));
  expect(claimed.started).toHaveLength(1);
  const [started] = claimed.started;
  return { reqId: started?.reqId ?? '', attempt: started?.attempt ?? 0, owner } satisfies Held;
};

export const answer = (text: string) => ({ text, inputTokens: 3, outputTokens: 5 });

/** Events of an outcome, none for a refusal, an error or a replay. */
export const eventsOf = (outcome: CommandOutcome | Error | undefined): readonly StoredEvent[] =>
  outcome !== undefined && !(outcome instanceof Error) && 'events' in outcome ? outcome.events : [];

/** The request an event is about, if it is a request event. */
export const reqIdOf = (event: StoredEvent | undefined): string | undefined =>
  event !== undefined && 'reqId' in event ? event.reqId : undefined;

/** The account an event names, if it names one. */
export const accountIdOf = (event: StoredEvent | undefined): string | undefined =>
  event !== undefined && 'accountId' in event ? event.accountId : undefined;

export const seqsOf = (outcome: CommandOutcome | Error | undefined) => eventsOf(outcome).map((event) => event.seq);

/** Commits one command (in this process or another) and returns its outcome. */
export const commitOne = async (store: Pick<StoreShape, 'commit'>, command: Command) => {
  const [outcome] = await store.commit({ commands: [command] });
  return outcome;
};

/** The whole log as the read model replays it (from `fromSeq`). */
export const replay = async (store: StoreShape, fromSeq?: number): Promise<StoredEvent[]> => {
  const events: StoredEvent[] = [];
  for await (const event of store.reads.events(fromSeq)) events.push(event);
  return events;
};

export const oneToN = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

export const statusOf = async (store: StoreShape, reqId: string) => (await store.reads.request(reqId))?.status;

/** Resolves once `condition` holds, polling every few milliseconds; rejects after `withinMs` (a generous bound). */
export const eventually = async (condition: () => boolean, withinMs: number, what: string) => {
  const deadline = Date.now() + withinMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};
