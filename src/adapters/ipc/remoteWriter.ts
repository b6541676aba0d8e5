import type { Batch, CommandOutcome, CommitSummary, SharedWriterChanges } from '../../ports/Store.js';
import { StorageFault } from '../../ports/Store.js';
import { decodeError, decodeOutcome } from './outcomeCodec.js';
import { type CommitRequest, isChangedOutside, isCommitted } from './protocol.js';

/** How long commit summaries are gathered before `onChange` listeners hear one (as the file watcher gathers). */
const gatherMs = 10;

/** The IPC channel to the writer: `process` in a cluster worker. */
export type WriterChannel = {
  send(message: unknown, callback: (error: Error | null) => void): void;
  onMessage(listener: (message: unknown) => void): void;
  onDisconnect(listener: () => void): void;
};

/** This process's channel to its primary. */
export const primaryChannel = (): WriterChannel => ({
  send: (message, callback) => {
    if (process.send === undefined) callback(new Error('this process has no primary'));
    else process.send(message, callback);
  },
  onMessage: (listener) => void process.on('message', listener),
  onDisconnect: (listener) => void process.on('disconnect', listener),
});

export type RemoteWriter = {
  /** Sends a batch to the writer; resolves with its outcomes once the writer's commit holding it is durable. */
  commit(batch: Batch): Promise<readonly (CommandOutcome | Error)[]>;
  readonly changes: SharedWriterChanges;
  /** Every change heard: another process's commit (gathered) or a write from outside. */
  onChange(listener: () => void): () => void;
  /** Called before anything heard from the writer is passed on: the reads take a fresh snapshot, so that a caller
   * answered sees its commit (and everything before it). */
  setRefresh(refresh: () => void): void;
};

/**
 * A server process's side of the shared writer (`serve --processes N` on LMDB): batches go to the primary, which
 * commits them with the other processes' in one transaction (primaryWriter.ts) and answers with each commit's
 * summary. A primary that is gone answers nothing more: what waits fails as a storage fault, and the process stops
 * (serveOne.ts).
 */
export const createRemoteWriter = (channel: WriterChannel): RemoteWriter => {
  let nextId = 1;
  let gone = false;
  let refresh = () => {};
  const waiting = new Map<
    number,
    { resolve: (outcomes: readonly (CommandOutcome | Error)[]) => void; reject: (error: Error) => void }
  >();
  const commitListeners = new Set<(summary: CommitSummary) => void>();
  const foreignListeners = new Set<() => void>();
  const changeListeners = new Set<() => void>();
  let gathering: NodeJS.Timeout | undefined;
  const tellChanged = () => {
    gathering = undefined;
    for (const listener of [...changeListeners]) listener();
  };

  channel.onMessage((message) => {
    if (isCommitted(message)) {
      refresh();
      for (const answer of message.answers) {
        const caller = waiting.get(answer.id);
        if (caller === undefined) continue;
        waiting.delete(answer.id);
        if ('failed' in answer) caller.reject(decodeError(answer.failed));
        else caller.resolve(answer.outcomes.map(decodeOutcome));
      }
      const summary = message.summary;
      if (summary === undefined) return;
      for (const listener of commitListeners) listener(summary);
      if (changeListeners.size > 0 && gathering === undefined) gathering = setTimeout(tellChanged, gatherMs).unref();
    } else if (isChangedOutside(message)) {
      refresh();
      for (const listener of foreignListeners) listener();
      for (const listener of [...changeListeners]) listener();
    }
  });
  channel.onDisconnect(() => {
    gone = true;
    const failure = new StorageFault('the writer process (the primary) is gone');
    for (const caller of waiting.values()) caller.reject(failure);
    waiting.clear();
  });

  const listen =
    <L>(listeners: Set<L>) =>
    (listener: L) => {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    };

  return {
    commit: (batch) =>
      new Promise((resolve, reject) => {
        if (gone) return reject(new StorageFault('the writer process (the primary) is gone'));
        const id = nextId++;
        waiting.set(id, { resolve, reject });
        const request: CommitRequest = { airs: 'commit', id, commands: batch.commands, keyUses: batch.keyUses };
        channel.send(request, (error) => {
          if (error === null || !waiting.has(id)) return;
          waiting.delete(id);
          reject(new StorageFault(`the batch could not be sent to the writer: ${error.message}`));
        });
      }),
    changes: { onCommit: listen(commitListeners), onForeignChange: listen(foreignListeners) },
    onChange: listen(changeListeners),
    setRefresh: (fresh) => {
      refresh = fresh;
    },
  };
};
