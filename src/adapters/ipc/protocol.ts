import type { Command } from '../../domain/commands.js';
import type { CommitSummary, KeyUseEntry } from '../../ports/Store.js';
import type { EncodedError } from './outcomeCodec.js';

/*
 * The messages between a server process and the writer (the primary of `serve --processes N` on LMDB), over the
 * cluster's IPC channel (advanced serialization: plain data, undefined, bytes). One message type each way, plus the
 * writer's word that somebody outside the server's processes wrote.
 */

/** A server process's batch, numbered by it so that the answer finds its callers. */
export type CommitRequest = {
  readonly airs: 'commit';
  readonly id: number;
  readonly commands: readonly Command[];
  readonly keyUses?: readonly KeyUseEntry[] | undefined;
};

/** One batch's answer: its outcomes (encoded: outcomeCodec.ts) in the order of its commands, or why none. */
export type CommitAnswer =
  | { readonly id: number; readonly outcomes: readonly unknown[] }
  | { readonly id: number; readonly failed: EncodedError };

/**
 * One durable commit (or a failed one), told to every server process: the answers to that process's batches in it,
 * and what the commit means to a worker pool (none for a failed commit: nothing changed).
 */
export type Committed = {
  readonly airs: 'committed';
  readonly answers: readonly CommitAnswer[];
  readonly summary?: CommitSummary | undefined;
};

/** Somebody outside the server's processes (an `airs` command) wrote: everything is looked at again. */
export type ChangedOutside = { readonly airs: 'changed' };

const tagOf = (message: unknown): unknown =>
  typeof message === 'object' && message !== null ? (message as { airs?: unknown }).airs : undefined;

export const isCommitRequest = (message: unknown): message is CommitRequest =>
  tagOf(message) === 'commit' &&
  typeof (message as CommitRequest).id === 'number' &&
  Array.isArray((message as CommitRequest).commands);

export const isCommitted = (message: unknown): message is Committed =>
  tagOf(message) === 'committed' && Array.isArray((message as Committed).answers);

export const isChangedOutside = (message: unknown): message is ChangedOutside => tagOf(message) === 'changed';
