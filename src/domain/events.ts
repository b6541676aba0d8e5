import type { AccountEvent } from './account/events.js';
import type { BatchEvent } from './batch/events.js';
import type { FileEvent } from './file/events.js';
import type { RequestEvent } from './request/events.js';
import type { WebhookEvent } from './webhook/events.js';

/** Every event the log holds. */
export type DomainEvent = RequestEvent | AccountEvent | BatchEvent | FileEvent | WebhookEvent;

/** An event as stored: its place in the log (`seq`, from 1, gap-free) added. */
export type StoredEvent = DomainEvent & { readonly seq: number };

/** `isRequestEvent` tells events apart by the `Request` prefix of their type: this does not compile if a request
 * event's type lacks it or another event's type has it. */
export type EventNamesAreTellable = [RequestEvent['type']] extends [`Request${string}`]
  ? [
      Extract<AccountEvent['type'] | BatchEvent['type'] | FileEvent['type'] | WebhookEvent['type'], `Request${string}`>,
    ] extends [never]
    ? true
    : never
  : never;
const eventNamesAreTellable: EventNamesAreTellable = true;
void eventNamesAreTellable;
