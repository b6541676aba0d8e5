/**
 * The projection: how each event changes the views and their indexes, the same code for every store (LMDB, memory,
 * PostgreSQL). One file per kind of event, and ViewAccess (where it reads and writes) in viewAccess.ts; importers
 * read all of it from here.
 */
export { projectAccountEvent } from './accountProjection.js';
export {
  accountBatchKeyOf,
  accountOpenBatchKeyOf,
  openBatchInputKeyOf,
  projectBatchChange,
} from './batchProjection.js';
export { accountFileKeyOf, filePurposeKeyOf, projectFileEvent } from './fileProjection.js';
export {
  accountRequestKeyOf,
  accountRequestKindKeyOf,
  dayStartOf,
  dispatchKeyOf,
  groupOf,
  idempotencyKeyOf,
  projectRequestChange,
  requestKindOf,
  usageOf,
} from './requestProjection.js';
export type { DailyUsage, GroupName, IndexKey, IndexName, ViewAccess } from './viewAccess.js';
export {
  accountWebhookEndpointKeyOf,
  endpointWebhookDeliveryKeyOf,
  projectWebhookEvent,
  webhookDueKeyOf,
} from './webhookProjection.js';
