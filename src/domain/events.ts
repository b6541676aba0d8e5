import type { AccountEvent } from './account/events.js';
import type { RequestEvent } from './request/events.js';

/** Every event the log holds. */
export type DomainEvent = RequestEvent | AccountEvent;

/** An event as stored: its place in the log (`seq`, from 1, gap-free) added. */
export type StoredEvent = DomainEvent & { readonly seq: number };
