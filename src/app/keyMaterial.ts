import { createHash } from 'node:crypto';

/** Keys are stored only as their SHA-256 hash: a leaked database does not leak usable keys. */
export const hashKey = (key: string): string => createHash('sha256').update(key).digest('hex');

/** The part of a key that may be shown again (lists, dashboards) to tell keys apart: `sk_` and 8 characters. */
export const displayPrefix = (key: string): string => key.slice(0, 11);

/** What a well-formed key looks like; anything else is refused before any lookup. */
export const keyPattern = /^sk_[A-Za-z0-9_-]{32,128}$/;
