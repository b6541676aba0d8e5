/** What a batch writes (`Writes`), gathered while it is decided and projected, for writeAll's bulk statements. */
import type { AccountState, KeyState, SessionState } from '../../domain/account/state.js';
import type { BatchView } from '../../domain/batch/state.js';
import type { StoredEvent } from '../../domain/events.js';
import type { FileState } from '../../domain/file/state.js';
import type { AccountUploads } from '../../domain/file/uploads.js';
import type { RequestState } from '../../domain/request/state.js';
import { createTokenUseChanges } from '../../domain/tokens/tokenUse.js';
import type { UsageRow } from '../../domain/usage/hourlyUsage.js';
import type { DeliveryState } from '../../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../../domain/webhook/endpoint.js';

/** A request's change as the batch leaves it: its state, and its text (absent: whatever it held, if it keeps any). */
export type RequestWrite = { readonly state: RequestState; readonly text: string | undefined; readonly isNew: boolean };

/** What a batch writes, gathered while it is decided and projected. */
export class Writes {
  readonly requests = new Map<string, RequestWrite>();
  readonly accounts = new Map<string, AccountState>();
  readonly keys = new Map<string, KeyState>();
  /** `undefined`: the session ended (its row goes). */
  readonly sessions = new Map<string, SessionState | undefined>();
  readonly credentials = new Map<string, string | undefined>();
  readonly emails = new Map<string, string>();
  readonly keyHashes = new Map<string, string>();
  /** Batches' views as the batch leaves them (their rows' index columns follow from them: batchColumns). */
  readonly batches = new Map<string, BatchView>();
  /** `undefined`: the file was deleted (its row goes). */
  readonly files = new Map<string, FileState | undefined>();
  /** An account's uploads by account id; `undefined`: none left (its row goes). */
  readonly uploads = new Map<string, AccountUploads | undefined>();
  /** `undefined`: the entry goes. */
  readonly idempotency = new Map<string, { accountId: string; key: string; reqId: string | undefined }>();
  /** Sessions started (true) or ended (false) by this batch, by [accountId, sessionId]. */
  readonly accountSessions = new Map<string, boolean>();
  readonly queuedDeltas = new Map<string, number>();
  readonly processingDeltas = new Map<string, number>();
  readonly accountDeltas = new Map<string, number>();
  readonly usage = new Map<string, { accountId: string; day: number; input: number; output: number }>();
  /** Tokens added to accounts' token buckets (domain/tokens/tokenUse.ts). */
  readonly tokens = createTokenUseChanges();
  /** Rows of the hourly usage view this batch adds to (storage/hourlyUsage.ts), by `usageKeyString`. */
  readonly hourlyUsage = new Map<string, UsageRow>();
  readonly webhookEndpoints = new Map<string, WebhookEndpointState>();
  readonly webhookDeliveries = new Map<string, DeliveryState>();
  accountsVersionBumps = 0;
  events: StoredEvent[] = [];
  lastSeq: number | undefined;
}
