import type { StoredEvent } from '../domain/events.js';
import type { RequestState } from '../domain/request/state.js';
import type { KeyUseEntry } from '../ports/Store.js';

/** One record of a source's log: the sequence number it is stored under (its last event's), and its events. */
export type SourceLogRecord = {
  readonly key: number;
  /** Decodes the record and hands over its events in order (the object handed over may be reused: copy it to keep
   * it); throws when the record cannot be read. */
  readonly visit: (onEvent: (event: StoredEvent) => void) => void;
};

/** A request's record as the source holds it: its id, its view (compared, not decoded) and its text's bytes. */
export type SourceRequestRecord = {
  readonly reqId: string;
  /** Whether the record's view is exactly `state`. */
  readonly holds: (state: RequestState) => boolean;
  /** The text's bytes (read once the view matched: a damaged record may have none). */
  readonly text: () => Buffer;
};

/** The views a copy checks as they are (decoded as the source keeps them). */
export type KeptKind = 'batch' | 'file' | 'webhook endpoint' | 'webhook delivery';

/**
 * One store's data read from one snapshot, by a copy into another store (`airs migrate`: adapters/postgres/importLog.ts
 * reads the LMDB store through adapters/lmdb/logSource.ts). So the store written to never reads the other's files.
 */
export interface LogSource {
  /** The sequence number of the log's last event, as the source keeps it beside the log. */
  lastSeq(): number;
  /** The log's records in order. */
  records(): Iterable<SourceLogRecord>;
  /** The text a request's record holds now, as a string (undefined: no record). */
  textOf(reqId: string): string | undefined;
  /** Every request's record, in id order (the ids' bytes: as PostgreSQL's `COLLATE "C"` orders them). */
  requestRecords(): Iterable<SourceRequestRecord>;
  /** Every batch, file, webhook endpoint or delivery the source holds, in id order. */
  kept(kind: KeptKind): Iterable<{ readonly id: string; readonly state: () => unknown }>;
  /** What is kept beside the log and not in it: password and session hashes, and keys' last uses. */
  credentials(): Iterable<{ readonly key: string; readonly value: string }>;
  keyUses(): Iterable<KeyUseEntry>;
  /** Ends the snapshot. */
  close(): void;
}
