import { hash } from 'node:crypto';

/** Keys are stored only as their SHA-256 hash: a leaked database does not leak usable keys. (`crypto.hash`, one
 * call: a `createHash` object per API call cost twice as much.) */
export const hashKey = (key: string): string => hash('sha256', key, 'hex');

/** The part of a key that may be shown again (lists, dashboards) to tell keys apart: `sk_` and 8 characters. */
export const displayPrefix = (key: string): string => key.slice(0, 11);

/** What a well-formed key looks like; anything else is refused before any lookup. */
export const keyPattern = /^sk_[A-Za-z0-9_-]{32,128}$/;
