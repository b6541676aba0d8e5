import { randomBytes } from 'node:crypto';

/** A new webhook event id: `evt_` and 128 random bits in base64url (the form `webhookEventIdPattern` names). */
export const newWebhookEventId = (): string => `evt_${randomBytes(16).toString('base64url')}`;
